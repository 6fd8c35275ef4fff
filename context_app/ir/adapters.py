"""Render an envelope into provider request bodies (seed 004 "Provider Adapters").

Each adapter returns a JSON-ready dict: the request body minus transport
details. The text context is always the universal rendering (render_text), so
anchors are identical across providers; binaries are the envelope's included
attachments, already routed for the model class when the envelope was built.

Shapes follow the providers' documented formats:
  Anthropic Messages  {"model", "max_tokens", "system", "messages": [{"role": "user", "content": [blocks]}]}
      blocks: {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data"}}
              {"type": "image", "source": {"type": "base64", "media_type", "data"}}
              {"type": "text", "text"}
  OpenAI Chat Completions  {"model", "max_completion_tokens",
      "messages": [{"role": "system", "content"}, {"role": "user", "content": [parts]}]}
      parts: {"type": "text", "text"}, {"type": "image_url", "image_url": {"url": "data:<mime>;base64,<data>"}}
  Gemini generateContent (REST)  {"system_instruction": {"parts": [{"text"}]},
      "contents": [{"role": "user", "parts": [{"inline_data": {"mime_type", "data"}}, {"text"}]}]}
"""

from __future__ import annotations

from typing import Any

from .render import render_text
from .types import AttachmentManifest, ContextEnvelope

# Where binaries go relative to the text (seed 004 RenderPreferences.contentOrder):
# Anthropic recommends documents and images before the question; Gemini's
# examples put media first; OpenAI reads either, text first is clearer.


def _included(envelope: ContextEnvelope) -> list[AttachmentManifest]:
    return [a for a in envelope.attachments if a.included and a.data]


def to_anthropic(envelope: ContextEnvelope, *, system: str, model: str, max_tokens: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for attachment in _included(envelope):
        source = {"type": "base64", "media_type": attachment.mime_type, "data": attachment.data}
        if attachment.artifact_type == "raw_pdf":
            content.append({"type": "document", "source": {**source, "media_type": "application/pdf"}})
        else:
            content.append({"type": "image", "source": source})
    content.append({"type": "text", "text": render_text(envelope)})
    return {
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
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
