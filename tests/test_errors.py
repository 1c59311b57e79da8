"""The error tree is mapped once per front end: every class has its own HTTP status and CLI exit code."""

from __future__ import annotations

import inspect

import pytest

from citedocs import errors
from citedocs.api.errors import HTTP_STATUS, status_for
from citedocs.cli.common import EXIT_CODES, exit_code_for

CLASSES = sorted(
    (cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.CitedocsError)),
    key=lambda cls: cls.__name__,
)


def test_the_tree_is_all_in_errors_py() -> None:
    import citedocs

    defined_elsewhere = []
    for module in _all_modules(citedocs):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, errors.CitedocsError) and cls.__module__ != "citedocs.errors":
                defined_elsewhere.append(f"{cls.__module__}.{cls.__name__}")
    assert defined_elsewhere == []
    assert len(CLASSES) >= 15


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_class_has_a_status_and_an_exit_code(cls: type[errors.CitedocsError]) -> None:
    assert cls in HTTP_STATUS, f"{cls.__name__} has no HTTP status in api/errors.py"
    assert cls in EXIT_CODES, f"{cls.__name__} has no exit code in cli/common.py"
    status, code = HTTP_STATUS[cls]
    assert 400 <= status < 600 and code
    # 0 is success; 2 is typer's usage error, and a read-only command's missing index: set it up first
    assert EXIT_CODES[cls] != 0 and (EXIT_CODES[cls] != 2 or cls is errors.NoIndexError)


def test_statuses_say_what_kind_of_failure_it_is() -> None:
    assert status_for(errors.AccessDenied("no")) == (403, "access_denied")
    assert status_for(errors.UnsafeURLError("no"))[0] == 403
    assert status_for(errors.NotFoundError("gone"))[0] == 404
    assert status_for(errors.InputError("bad"))[0] == 422
    assert status_for(errors.LLMError("down"))[0] == 502
    assert exit_code_for(errors.NotFoundError("gone")) == 3
    assert exit_code_for(errors.UnsafeURLError("no")) == 4


def _all_modules(package: object) -> list[object]:
    import importlib
    import pkgutil

    found = []
    for info in pkgutil.walk_packages(package.__path__, "citedocs."):  # type: ignore[attr-defined]
        if info.name.endswith("__main__"):
            continue
        found.append(importlib.import_module(info.name))
    return found


def test_the_fast_path_maps_server_errors_to_the_same_exit_codes() -> None:
    from citedocs.cli import remote
    from citedocs.cli.common import EXIT_DENIED, EXIT_ERROR, EXIT_NOT_FOUND, EXIT_UNAVAILABLE

    for cls in CLASSES:
        status, _ = HTTP_STATUS[cls]
        assert remote.exit_code(status) == EXIT_CODES[cls] or (status, EXIT_CODES[cls]) in {
            (
                500,
                EXIT_ERROR,
            ),  # a misconfigured server: the CLI calls it an error, the fast path "unavailable"
            (404, 2),  # no index: a server always has one; only the CLI's read-only commands say so
        }, cls.__name__
    assert (remote.exit_code(404), remote.exit_code(403), remote.exit_code(422)) == (
        EXIT_NOT_FOUND,
        EXIT_DENIED,
        EXIT_ERROR,
    )
    assert remote.exit_code(503) == EXIT_UNAVAILABLE
