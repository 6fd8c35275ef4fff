"""The page's own JavaScript keeps to behaviours (issue 23): at most 500 lines, counted as the issue
counted its 1,698 (`wc -l static/*.js`: comments and blank lines too), and no HTML made from strings:
markup comes rendered from the server's templates, and the one place that parses it is the swap of a
server-rendered fragment."""

import re
from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "static"
SCRIPTS = sorted(STATIC.glob("*.js"))


def test_our_javascript_is_at_most_500_lines():
    counts = {script.name: len(script.read_text().splitlines()) for script in SCRIPTS}
    assert len(counts) >= 5 and sum(counts.values()) <= 500, counts


def test_no_script_builds_html_from_strings():
    html_sinks = re.compile(
        r"\.(innerHTML|outerHTML|insertAdjacentHTML)\b|document\.write|createElement\(\"(?!template)"
    )
    found = {
        f"{script.name}:{number}": line.strip()
        for script in SCRIPTS
        for number, line in enumerate(script.read_text().splitlines(), 1)
        if html_sinks.search(line)
    }
    # groundwork.js's swapFragments parses a fragment the server rendered (Django's autoescaping) in a <template>.
    assert list(found.values()) == ["parsed.innerHTML = html;"], found
