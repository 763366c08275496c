// A chat page as a React app would write it: useStream from another origin, one message
// submitted, the thread's messages rendered as they stream. The API URL comes from ?api=.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useEffect, useRef } from "react";
import { createRoot } from "react-dom/client";

const api = new URLSearchParams(location.search).get("api");

const text = (content) =>
  typeof content === "string" ? content : content.map((part) => part.text ?? "").join("");

function Chat() {
  const stream = useStream({ apiUrl: api, assistantId: "chat", messagesKey: "messages" });
  const sent = useRef(false);
  useEffect(() => {
    if (sent.current) return; // StrictMode or a re-render must not send twice
    sent.current = true;
    stream.submit({ messages: [{ type: "human", content: "hello from the browser" }] });
  }, []);
  return (
    <main>
      <ol id="messages">
        {stream.messages.map((m) => <li key={m.id}>{`${m.type}: ${text(m.content)}`}</li>)}
      </ol>
      <div id="loading">{String(stream.isLoading)}</div>
      <div id="error">{stream.error ? String(stream.error) : ""}</div>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
