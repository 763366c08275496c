// The review page's behaviour: render the drawing, and send one answer for every pending call.
// Ids and the CSRF token are read from data- attributes; the cookies go along by themselves.
"use strict";

if (window.mermaid) {
  window.mermaid.initialize({startOnLoad: true, securityLevel: "strict"});
}

function say(text) {
  document.getElementById("status").textContent = text;
}

async function send(thread, resume) {
  const res = await fetch("/review/" + encodeURIComponent(thread) + "/answer", {
    method: "POST", credentials: "same-origin",
    headers: {"content-type": "application/json",
              "x-csrf-token": document.getElementById("csrf").dataset.token},
    body: JSON.stringify({resume: resume}),
  });
  if (!res.ok) {
    say("refused: " + (await res.text()));
    return;
  }
  location.reload();
}

function decisions(form) {
  const answer = {};
  for (const call of form.querySelectorAll("fieldset.call")) {
    const chosen = call.querySelector("input[type=radio]:checked");
    if (!chosen) throw new Error("choose a decision for every call (" + call.dataset.call + ")");
    const decision = {action: chosen.value, digest: call.dataset.digest};
    if (chosen.value === "edit") {
      try {
        decision.args = JSON.parse(call.querySelector("textarea.edit-args").value);
      } catch (err) {
        throw new Error("the edited arguments of " + call.dataset.call + " are not JSON: " + err.message);
      }
    }
    if (chosen.value === "reject") {
      decision.reason = call.querySelector("input.reason").value || "rejected in review";
    }
    answer[call.dataset.call] = decision;
  }
  return answer;
}

function answers(form) {
  const answer = {};
  for (const block of form.querySelectorAll("fieldset.interrupt")) {
    answer[block.dataset.interrupt] = JSON.parse(block.querySelector("textarea.resume").value);
  }
  return answer;
}

for (const [id, read] of [["decide", decisions], ["generic", answers]]) {
  const form = document.getElementById(id);
  if (!form) continue;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let resume;
    try {
      resume = read(form);
    } catch (err) {
      say(err.message);
      return;
    }
    form.querySelector("button[type=submit]").disabled = true;
    await send(form.dataset.thread, resume);
    form.querySelector("button[type=submit]").disabled = false;
  });
}
