"""An MCP tool's JSON Schema as a pydantic argument model, so the executor validates it as any tool.

Top-level properties become typed, strict fields (errors name the field); the whole
schema is then checked with `jsonschema` for what fields cannot say (enums, patterns,
nested objects).
"""

from __future__ import annotations

from typing import Any, ClassVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError

_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
    "null": type(None),
}


class McpArguments(BaseModel):
    """Base of every MCP tool's argument model; `schema_validator` checks the full schema."""

    model_config = ConfigDict(strict=True, extra="allow")  # JSON Schema's default
    schema_validator: ClassVar[Draft202012Validator]

    @model_validator(mode="after")
    def _full_schema(self) -> McpArguments:
        errors = sorted(self.schema_validator.iter_errors(self.to_call()), key=lambda e: e.path)
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.absolute_path) or "arguments"
            raise PydanticCustomError(
                "json_schema", "{where}: {message}", {"where": where, "message": first.message}
            )
        return self

    def to_call(self) -> dict[str, Any]:
        """The arguments to send: what the model gave, server defaults left to the server."""
        return self.model_dump(exclude_unset=True)


class ClosedMcpArguments(McpArguments):
    """For a schema with `additionalProperties: false`."""

    model_config = ConfigDict(strict=True, extra="forbid")


def _annotation(prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        types = [_TYPES[k] for k in kind if k in _TYPES]
        if len(types) != len(kind) or not types:
            return Any
        union = types[0]
        for t in types[1:]:
            union = union | t
        return union
    if kind == "number":
        return int | float  # JSON has one number type; 3 is a valid number
    return _TYPES.get(kind, Any) if isinstance(kind, str) else Any


def args_model(tool_name: str, schema: dict[str, Any]) -> type[McpArguments]:
    """A model class validating arguments against `schema` (an object schema)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"tool {tool_name!r} has an invalid input schema: {exc.message}") from exc
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for key, prop in props.items():
        if not key.isidentifier() or key.startswith("_"):
            continue  # left to the jsonschema check; pydantic fields need identifier names
        prop = prop if isinstance(prop, dict) else {}
        annotation = _annotation(prop)
        described = Field(description=prop.get("description"))
        if key in required:
            fields[key] = (annotation, described)
        else:
            fields[key] = (
                annotation | None,
                Field(default=prop.get("default"), description=prop.get("description")),
            )
    closed = schema.get("additionalProperties") is False
    model = create_model(
        f"{tool_name.replace('.', '_')}_args",
        __base__=ClosedMcpArguments if closed else McpArguments,
        **fields,
    )
    model.schema_validator = Draft202012Validator(schema)
    return model
