"""The HTML reader: lxml's parser fed in pieces, its events turned into blocks under heading paths."""

import re

from .blocks import Block, _path, heading_level
from .limits import ExtractionError, _Budget, _short

# A line break inside a block (<br>, a <dt>'s end), kept through the collapsing of the markup's whitespace: a
# NUL, which no page's text holds (libxml2 gives none) and `\s` does not match.
LINE_BREAK = "\x00"


class _HTMLText:
    """An lxml parser target: libxml2 reads any tag soup in linear time (html.parser is
    quadratic on unclosed tags: 250 KB of "<a" took 27 s). A page that marks its content (`<main>`,
    `role="main"`) is read there alone: its cookie banner, menus and footer are the site's, not the page's."""

    SKIP = {"script", "style", "noscript", "template", "svg", "iframe", "object", "head"}
    BLOCK = {
        "p",
        "div",
        "section",
        "article",
        "li",
        "ul",
        "ol",
        "table",
        "tr",
        "blockquote",
        "pre",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "figure",
        "figcaption",
        "dd",
        "hr",
        "form",
        "body",
    }
    HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
    BOLD = {"b", "strong"}
    # A paragraph all in bold that reads as a heading is one (`flush`), as many a page exported from a word
    # processor or a wiki heads its sections; not a list's item or a table's cell, a term of its own.
    BOLD_HEADS = {"p", "div"}

    def __init__(self, budget: "_Budget") -> None:
        self.budget = budget
        self.blocks: list[Block] = []
        self.buffer: list[str] = []
        self.skip_depth = 0
        self.heading_level: int | None = None
        self.headings: list[tuple[int, str]] = []
        self.tagged = 1  # the level of the last heading in an <h1>–<h6>
        self.block_tag = ""  # the block element the buffer's text stands in
        # The buffer holds a table's rows, a line each: a table is one block, as a DOCX's is, so that a span never
        # opens in the middle of it with rows whose header ("Estate | Block | … | Lift maintenance") names their
        # cells in the span before.
        self.table_rows = False
        self.bold_depth = 0
        self.plain_chars = 0  # the buffer's characters outside <b> and <strong>
        self.title: list[str] = []
        self.in_title = False
        self.opened_main: list[bool] = []  # per open element, whether it is the page's main content
        self.main_blocks: list[Block] = []  # the blocks read inside the main content

    def start(self, tag, attrib) -> None:
        if not isinstance(tag, str):  # a comment or processing instruction
            return
        tag = tag.lower()
        main = tag == "main" or str(attrib.get("role", "")).lower() == "main"
        if main:
            self.flush()  # what came before is outside it
        self.opened_main.append(main)
        if tag == "title":
            self.in_title = True
        elif tag in self.SKIP:
            self.skip_depth += 1
        elif tag in self.HEADINGS:
            self.flush()
            self.heading_level = self.HEADINGS[tag]
        elif tag in self.BOLD:
            self.bold_depth += 1
        elif tag == "dt":  # a term starts a block, and its definition (<dd>) goes on in it, a line below
            self.flush()
        elif tag == "dd" and self.buffer:
            self.buffer.append(LINE_BREAK)
        elif tag == "tr" and self.table_rows:  # a row after another: a line of the table's block
            self.buffer.append(LINE_BREAK)
        elif tag in self.BLOCK:
            self.flush()
            self.block_tag = tag
            self.table_rows = tag == "tr"
        elif tag in ("td", "th"):
            self.buffer.append(" | ")
        elif tag == "br":  # a line of its block: an address's, a poem's
            self.buffer.append(LINE_BREAK)

    def end(self, tag) -> None:
        if not isinstance(tag, str):
            return
        tag = tag.lower()
        if self.opened_main and self.opened_main[-1]:
            self.flush()  # its last text is inside it
        if self.opened_main:
            self.opened_main.pop()
        if tag == "title":
            self.in_title = False
        elif tag in self.SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
        elif tag in self.HEADINGS:
            text = self._take()
            if text:
                level = self.tagged = self.heading_level or self.HEADINGS[tag]
                self._add_heading(text, level)
            self.heading_level = None
        elif tag in self.BOLD:
            self.bold_depth = max(0, self.bold_depth - 1)
        elif tag == "tr" and self.table_rows:
            pass  # the table's next row, or its end, goes on or closes the block
        elif tag in self.BLOCK:
            self.flush()

    def data(self, data) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skip_depth:
            self.buffer.append(data)
            if not self.bold_depth:
                self.plain_chars += len(data.strip())

    def _take(self) -> str:
        text = re.sub(r"\s+", " ", "".join(self.buffer)).strip(" |")
        self.buffer, self.plain_chars, self.table_rows = [], 0, False
        lines = (line.strip(" |") for line in text.split(LINE_BREAK))
        return "\n".join(line for line in lines if line).strip()

    def flush(self) -> None:
        if self.heading_level is not None:
            return
        bold = not self.plain_chars and self.block_tag in self.BOLD_HEADS
        text = self._take()
        if text and bold and "\n" not in text and heading_level(text) is not None:
            self._add_heading(text, self.tagged + 1)  # one below the <h1>–<h6> it stands under
        elif text:
            self._add(Block(text, _path(self.headings)))
            self.budget.check_time()

    def _add_heading(self, text: str, level: int) -> None:
        self.headings = [h for h in self.headings if h[0] < level] + [(level, text)]
        self._add(Block(text, _path(self.headings), new_section=True))

    def _add(self, block: Block) -> None:
        self.blocks.append(block)
        if True in self.opened_main:
            self.main_blocks.append(block)

    def close(self) -> None:
        return None


# A page's <main> is its content only when it holds this share of the page's text at least: a <main> around a
# banner or a heading alone, the article beside it, would lose the article.
MAIN_MIN_SHARE = 1 / 3


def _holds_the_page(main: list[Block], every: list[Block]) -> bool:
    return bool(main) and sum(len(b.text) for b in main) >= MAIN_MIN_SHARE * sum(len(b.text) for b in every)


HTML_FEED_CHARS = 64 * 1024  # the budget is checked between pieces as well as between blocks


def _html_blocks(text: str, budget: "_Budget") -> list[Block]:
    # Lazy: lxml loads only when an HTML file comes (in the extraction child, extraction.isolation).
    from lxml import etree

    target = _HTMLText(budget)
    # No network, no entities beyond HTML's own: a file is read as the text it holds.
    parser = etree.HTMLParser(target=target, recover=True, no_network=True, remove_comments=True, remove_pis=True)
    try:
        for start in range(0, len(text), HTML_FEED_CHARS):
            budget.check_time()
            parser.feed(text[start : start + HTML_FEED_CHARS])
        parser.close()
    except (ExtractionError, MemoryError):
        raise
    except Exception as exc:
        raise ExtractionError("corrupt", f"HTML could not be read: {_short(exc)}") from None
    target.flush()
    title = re.sub(r"\s+", " ", "".join(target.title)).strip()
    blocks = target.main_blocks if _holds_the_page(target.main_blocks, target.blocks) else target.blocks
    if title and not (blocks and blocks[0].text == title):
        blocks.insert(0, Block(title, "", new_section=True))
    return blocks
