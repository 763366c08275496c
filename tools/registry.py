"""The allowlist: the tools a graph may call, registered by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator

from pydantic import BaseModel

from graphwright.tools.spec import Risk, ToolFunc, ToolSpec, Trust


class ToolRegistry:
    """Tools by name; anything not registered here is refused by the executor."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._by_model_name: dict[str, str] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec) -> ToolSpec:
        if spec.name in self._specs:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        if self._by_model_name.get(spec.model_name, spec.name) != spec.name:
            raise ValueError(
                f"tools {spec.name!r} and {self._by_model_name[spec.model_name]!r} "
                f"would both be called {spec.model_name!r} by the model"
            )
        self._specs[spec.name] = spec
        self._by_model_name[spec.model_name] = spec.name
        return spec

    def tool(
        self,
        args_model: type[BaseModel],
        *,
        name: str | None = None,
        risk: Risk = "read",
        trust: Trust = "trusted",
        timeout_s: float = 30.0,
        max_result_chars: int = 4_000,
        retry_reads: int = 0,
        keyed: bool = False,
    ) -> Callable[[ToolFunc], ToolFunc]:
        """Register `func(args, ctx)`; its docstring is the description the model reads."""

        def decorate(func: ToolFunc) -> ToolFunc:
            self.add(
                ToolSpec(
                    name=name or func.__name__,
                    description=inspect.cleandoc(func.__doc__ or ""),
                    args_model=args_model,
                    func=func,
                    risk=risk,
                    trust=trust,
                    timeout_s=timeout_s,
                    max_result_chars=max_result_chars,
                    retry_reads=retry_reads,
                    keyed=keyed,
                )
            )
            return func

        return decorate

    def get(self, name: str) -> ToolSpec | None:
        """The tool registered as `name`, or as the model calls it (`git__status`)."""
        spec = self._specs.get(name)
        if spec is None and name in self._by_model_name:
            spec = self._specs[self._by_model_name[name]]
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)
