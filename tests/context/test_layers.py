"""Dependencies point one way: conversation_app → research_app → context_app (docs/architecture.md).

context_app's domain imports nothing from the other apps; only its front door (the REST views
in context_app/api/ and the websocket consumer) uses research_app's sessions and decorators.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRONT_DOOR = {"api", "consumers.py", "routing.py", "migrations"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_context_domain_imports_no_other_app():
    offending = {}
    for path in sorted((ROOT / "context_app").rglob("*.py")):
        if path.relative_to(ROOT / "context_app").parts[0] in FRONT_DOOR:
            continue
        others = {m for m in imported_modules(path) if m.split(".")[0] in ("research_app", "conversation_app")}
        if others:
            offending[str(path.relative_to(ROOT))] = sorted(others)
    assert offending == {}
