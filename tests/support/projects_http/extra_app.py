"""A user's own app, mounted beside the API by `http.app`."""

from fastapi import FastAPI

app = FastAPI()


@app.get("/hello")
def hello() -> dict[str, str]:
    return {"hello": "from the user's app"}
