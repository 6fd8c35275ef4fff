"""Render an envelope into provider request bodies (seed 004 "Provider Adapters").

Each adapter returns a JSON-ready dict: the request body minus transport
details. The text context is always the universal rendering (render_text), so
anchors are identical across providers; binaries are the envelope's included
attachments, already routed for the model class when the envelope was built.

Shapes follow the providers' documented formats:
  Anthropic Messages  {"model", "max_tokens", "system": [{"type": "text", "text", "cache_control"}],
      "messages": [{"role": "user", "content": [blocks]}]}
      blocks: {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data"}}
              {"type": "image", "source": {"type": "base64", "media_type", "data"}}
              {"type": "text", "text", "cache_control"?}  the context: index and chunks
              {"type": "text", "text"}  the task
      Prompt caching: the stable prefix comes first and ends in a cache_control
      breakpoint: the system prompt, and, when the caller says the same context
      comes again (`cache_context`: a conversation's files, turn after turn), the
      binaries and the context text. The task text, which changes from call to
      call, follows. The text blocks joined are render_text(envelope).
  OpenAI Chat Completions  {"model", "max_completion_tokens",
      "messages": [{"role": "system", "content"}, {"role": "user", "content": [parts]}]}
      parts: {"type": "text", "text"}, {"type": "image_url", "image_url": {"url": "data:<mime>;base64,<data>"}}
  Gemini generateContent (REST)  {"system_instruction": {"parts": [{"text"}]},
      "contents": [{"role": "user", "parts": [{"inline_data": {"mime_type", "data"}}, {"text"}]}]}
"""

from __future__ import annotations

from typing import Any

from llm_platform.ir.render import PART_SEPARATOR, render_parts, render_text
from llm_platform.ir.types import AttachmentManifest, ContextEnvelope

# Where binaries go relative to the text (seed 004 RenderPreferences.contentOrder):
# Anthropic recommends documents and images before the question; Gemini's
# examples put media first; OpenAI reads either, text first is clearer.


def _included(envelope: ContextEnvelope) -> list[AttachmentManifest]:
    return [a for a in envelope.attachments if a.included and a.data]


# Anthropic prompt caching: a block with this marker ends a prefix the API may cache (at most 4 per request).
CACHE_BREAKPOINT = {"type": "ephemeral"}


def _text_block(text: str, *, cached: bool) -> dict[str, Any]:
    block = {"type": "text", "text": text}
    return {**block, "cache_control": CACHE_BREAKPOINT} if cached else block


def anthropic_system(system: str, *, cache: bool = True) -> list[dict[str, Any]]:
    """The system prompt as one text block, cacheable (none when it is empty: the API refuses empty blocks)."""
    return [_text_block(system, cached=cache)] if system else []


def to_anthropic(
    envelope: ContextEnvelope,
    *,
    system: str,
    model: str,
    max_tokens: int,
    cache: bool = True,
    cache_context: bool = False,
) -> dict[str, Any]:
    """`cache`: mark the system prompt for prompt caching; `cache_context`: the context too.

    A cache write costs more than plain input (1.25x at Anthropic's prices), so a
    context is marked only where it is sent again: a research step's search results
    are read once, a conversation's files every turn."""
    content: list[dict[str, Any]] = []
    for attachment in _included(envelope):
        source = {"type": "base64", "media_type": attachment.mime_type, "data": attachment.data}
        if attachment.artifact_type == "raw_pdf":
            content.append({"type": "document", "source": {**source, "media_type": "application/pdf"}})
        else:
            content.append({"type": "image", "source": source})
    *context, task = render_parts(envelope)
    content.append(_text_block(PART_SEPARATOR.join(context) + PART_SEPARATOR, cached=cache and cache_context))
    content.append(_text_block(task, cached=False))
    return {
        "model": model,
        "max_tokens": max_tokens,
        "system": anthropic_system(system, cache=cache),
        "messages": [{"role": "user", "content": content}],
    }


def to_openai(envelope: ContextEnvelope, *, system: str, model: str, max_tokens: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": render_text(envelope)}]
    for attachment in _included(envelope):
        if attachment.artifact_type == "raw_pdf":
            continue  # not routed to OpenAI (V1): its PDFs arrive as page images or text
        parts.append(
            {"type": "image_url", "image_url": {"url": f"data:{attachment.mime_type};base64,{attachment.data}"}}
        )
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": parts})
    # max_completion_tokens replaces the deprecated max_tokens (rejected by reasoning models).
    return {"model": model, "max_completion_tokens": max_tokens, "messages": messages}


def to_gemini(envelope: ContextEnvelope, *, system: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"inline_data": {"mime_type": a.mime_type, "data": a.data}} for a in _included(envelope)
    ]
    parts.append({"text": render_text(envelope)})
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": parts}]}
    if system:
        body["system_instruction"] = {"parts": [{"text": system}]}
    return body


def to_provider(
    provider: str, envelope: ContextEnvelope, *, system: str, model: str = "", max_tokens: int = 8192
) -> dict[str, Any]:
    """Dispatch by provider name ("anthropic", "openai", "gemini")."""
    if provider == "anthropic":
        return to_anthropic(envelope, system=system, model=model, max_tokens=max_tokens)
    if provider == "openai":
        return to_openai(envelope, system=system, model=model, max_tokens=max_tokens)
    if provider == "gemini":
        return to_gemini(envelope, system=system)
    raise ValueError(f"no adapter for provider {provider!r} (expected anthropic, openai or gemini)")
