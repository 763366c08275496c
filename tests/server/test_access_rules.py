"""The Agent Server's authorization semantics, decided without a server: which handler runs,
what its result means, the filter language, and per-user isolation when no handler decides."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import HTTPException
from langgraph_sdk import Auth

from graphwright.server.auth.access import Grant, decide, matches
from graphwright.server.auth.authority import Authority, User, to_user
from graphwright_errors import ConfigurationError

ALICE = User(identity="alice", permissions=("admin",))


def request_for(auth: Auth | None) -> Any:
    return SimpleNamespace(
        app=SimpleNamespace(state=SimpleNamespace(authority=Authority(auth=auth)))
    )


def decided(auth: Auth, resource: str, action: str, value: dict[str, Any] | None = None) -> Grant:
    return asyncio.run(decide(request_for(auth), ALICE, resource, action, value or {}))


def layered() -> Auth:
    auth = Auth()

    @auth.authenticate
    async def who(authorization: str | None) -> str:
        return "alice"

    @auth.on
    async def everything(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
        return {"level": "global"}

    @auth.on.threads
    async def threads(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
        return {"level": "threads"}

    @auth.on.threads.delete
    async def delete(ctx: Auth.types.AuthContext, value: Any) -> bool:
        return "admin" in ctx.user.permissions and ctx.resource == "threads"

    @auth.on.crons.create
    async def stamp(ctx: Auth.types.AuthContext, value: Any) -> None:
        value["metadata"]["team"] = "blue"

    @auth.on.assistants.read
    async def teapot(ctx: Auth.types.AuthContext, value: Any) -> None:
        raise Auth.exceptions.HTTPException(status_code=418, detail="no")

    return auth


@pytest.mark.parametrize(
    ("resource", "action", "filters"),
    [
        ("threads", "read", {"level": "threads"}),  # resource handler beats the global one
        ("threads", "delete", None),  # resource+action beats both; True allows
        ("crons", "read", {"level": "global"}),  # nothing more specific: the global handler
        ("crons", "create", None),  # None allows, and the handler had the say
    ],
)
def test_the_most_specific_handler_decides(resource: str, action: str, filters: Any) -> None:
    grant = decided(layered(), resource, action)
    assert grant.filters == filters


def test_metadata_set_on_create_is_kept_and_the_owner_stamped() -> None:
    grant = decided(layered(), "crons", "create", {"metadata": None, "schedule": "* * * * *"})
    assert grant.metadata == {"team": "blue", "owner": "alice"}


def test_false_is_403_and_a_raised_http_exception_keeps_its_status() -> None:
    refusing = Auth()

    @refusing.on.threads.delete
    async def no(ctx: Auth.types.AuthContext, value: Any) -> bool:
        return False

    with pytest.raises(HTTPException) as caught:
        decided(refusing, "threads", "delete", {"thread_id": "t"})
    assert caught.value.status_code == 403
    with pytest.raises(HTTPException) as caught:
        decided(layered(), "assistants", "read")
    assert caught.value.status_code == 418 and caught.value.detail == "no"


@pytest.mark.parametrize(
    ("metadata", "filters", "ok"),
    [
        ({"owner": "a"}, {"owner": "a"}, True),
        ({"owner": "a"}, {"owner": "b"}, False),
        ({}, {"owner": "a"}, False),
        ({"owner": "a"}, {"owner": {"$eq": "a"}}, True),
        ({"members": ["a", "b"]}, {"members": {"$contains": "b"}}, True),
        ({"members": ["a", "b"]}, {"members": {"$contains": ["b", "a"]}}, True),
        ({"members": ["a"]}, {"members": {"$contains": ["a", "c"]}}, False),
        ({"members": "ab"}, {"members": {"$contains": "a"}}, False),
        ({"owner": "a", "team": "x"}, {"owner": "a", "team": "y"}, False),  # ANDed
    ],
)
def test_the_filter_language(metadata: dict[str, Any], filters: dict[str, Any], ok: bool) -> None:
    assert matches(metadata, filters) is ok


def test_an_unknown_filter_operator_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"\$gt"):
        matches({"n": 1}, {"n": {"$gt": 0}})


def test_without_handlers_each_user_gets_their_own_store_namespace() -> None:
    auth = Auth()

    @auth.authenticate
    async def who(authorization: str | None) -> str:
        return "alice"

    assert decided(auth, "store", "put", {"namespace": ["notes"]}).namespace == ("alice", "notes")
    assert decided(auth, "store", "get", {"namespace": "notes.x"}).namespace == (
        "alice",
        "notes",
        "x",
    )
    assert decided(auth, "store", "search", {"namespace_prefix": ["alice", "notes"]}).namespace == (
        "alice",
        "notes",
    )
    assert decided(auth, "store", "list_namespaces", {}).namespace == ("alice",)
    assert decided(auth, "threads", "search", {}).filters == {"owner": "alice"}
    assert decided(auth, "assistants", "search", {}).filters == {  # own, and the graphs'
        "$or": [{"owner": "alice"}, {"created_by": "system", "owner": None}]
    }


def test_a_store_handler_rewrites_the_namespace() -> None:
    auth = Auth()

    @auth.on.store()
    async def scope(ctx: Auth.types.AuthContext, value: Any) -> None:
        value["namespace"] = ("tenant", *value["namespace"])

    assert decided(auth, "store", "put", {"namespace": ["a"]}).namespace == ("tenant", "a")


def test_what_an_authenticate_handler_may_return() -> None:
    assert to_user("bob").identity == "bob"
    user = to_user({"identity": "bob", "permissions": ["x"], "org": "acme"})
    assert (user.identity, user.permissions, user["org"], "org" in user) == (
        "bob",
        ("x",),
        "acme",
        True,
    )
    assert to_user(SimpleNamespace(identity="carol", permissions=["y"])).permissions == ("y",)
    with pytest.raises(ConfigurationError):
        to_user({"permissions": []})
