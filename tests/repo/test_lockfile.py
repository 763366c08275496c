"""requirements-dev.lock, which scripts/bootstrap installs: it answers pyproject.toml, pins
every package with its hashes, names no registry, and is what the venv holds."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, version

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import ROOT

LOCK = ROOT / "requirements-dev.lock"
REFRESH = "refresh it with `make lock`"


def entries() -> list[tuple[Requirement, list[str]]]:
    """Each pin of the lock (`name==version ; marker`) with its hashes."""
    text = re.sub(r"\s*#.*", "", LOCK.read_text(encoding="utf-8"))  # annotations
    logical = [line for line in text.replace("\\\n", " ").splitlines() if line.strip()]
    found = []
    for line in logical:
        spec, *hashes = line.split(" --hash=")
        found.append((Requirement(spec), [h.strip() for h in hashes]))
    return found


def wanted() -> list[Requirement]:
    """What pyproject.toml asks for: the dependencies and the dev extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [
        Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    ]


def test_every_requirement_of_pyproject_has_a_pin_that_satisfies_it() -> None:
    pins: dict[str, list[str]] = {}
    for req, _ in entries():
        (pinned,) = req.specifier
        pins.setdefault(canonicalize_name(req.name), []).append(pinned.version)
    stale = [
        str(req)
        for req in wanted()
        if not any(
            req.specifier.contains(v, prereleases=True)
            for v in pins.get(canonicalize_name(req.name), [])
        )
    ]
    assert not stale, f"requirements-dev.lock does not satisfy {stale}: {REFRESH}"


def test_every_pin_is_exact_and_hashed_and_no_registry_is_named() -> None:
    found = entries()
    assert len(found) > 100, "the lock holds the whole dev environment"
    loose = [str(req) for req, _ in found if [s.operator for s in req.specifier] != ["=="]]
    unhashed = [str(req) for req, hashes in found if not hashes]
    assert not loose, f"not pinned with ==: {loose}"
    assert not unhashed, f"pinned without a hash: {unhashed}"
    # The lock installs from whichever registry pip and uv are set up with, so it names none.
    text = LOCK.read_text(encoding="utf-8")
    assert "://" not in text
    assert not re.search(r"^\s*-(-index-url|-extra-index-url|-find-links|i|f)\b", text, re.M)


def test_the_venv_holds_the_locked_versions() -> None:
    """What scripts/bootstrap installed is the lock, for this interpreter's markers."""
    differ = []
    for req, _ in entries():
        if req.marker is not None and not req.marker.evaluate():
            continue
        (pinned,) = req.specifier
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            installed = "missing"
        if installed != pinned.version:
            differ.append(f"{req.name} {installed} (locked {pinned.version})")
    assert not differ, f"the venv is not the lock: {differ}; run ./scripts/bootstrap"
