"""LangGraph's custom auth, as its docs write it: a token or nothing."""

from langgraph_sdk import Auth

auth = Auth()

USERS = {"token-alice": "alice", "token-bob": "bob"}


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in USERS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="missing or bad token")
    return USERS[token]
