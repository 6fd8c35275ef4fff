"""Modality routing (seed 004 "Modality Policy"): what each source becomes for a model class.

Capability classes, not provider names:
    T0 text-only       images -> text description, PDFs -> extracted text
    V1 vision          images -> image blocks,     PDFs -> rasterised page images
    D1 native document images -> image blocks,     PDFs -> native document blocks
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CapabilityClass = Literal["T0", "V1", "D1"]
PdfRoute = Literal["native", "images", "text"]
ImageRoute = Literal["image", "text_description", "omit"]
WebpageRoute = Literal["text", "text+screenshot"]


@dataclass(frozen=True)
class ProviderCapabilities:
    supports_vision: bool = False
    supports_pdf_native: bool = False

    @property
    def capability_class(self) -> CapabilityClass:
        if self.supports_pdf_native:
            return "D1"
        return "V1" if self.supports_vision else "T0"

    @classmethod
    def of_class(cls, capability_class: CapabilityClass) -> ProviderCapabilities:
        if capability_class not in ("T0", "V1", "D1"):
            raise ValueError(f"unknown capability class {capability_class!r} (expected T0, V1 or D1)")
        return cls(supports_vision=capability_class != "T0", supports_pdf_native=capability_class == "D1")


# What the adapters in this package can send per provider. OpenAI's Chat
# Completions route here is images only (native PDF input is left to v2, as the seed says).
DEFAULT_CAPABILITIES: dict[str, ProviderCapabilities] = {
    "anthropic": ProviderCapabilities(supports_vision=True, supports_pdf_native=True),
    "gemini": ProviderCapabilities(supports_vision=True, supports_pdf_native=True),
    "openai": ProviderCapabilities(supports_vision=True, supports_pdf_native=False),
    "offline": ProviderCapabilities(),
}


def capabilities_for(provider_name: str) -> ProviderCapabilities:
    """Known defaults for a provider name; unknown providers are treated as text-only (T0)."""
    return DEFAULT_CAPABILITIES.get(provider_name, ProviderCapabilities())


def route_pdf(caps: ProviderCapabilities) -> PdfRoute:
    return {"D1": "native", "V1": "images", "T0": "text"}[caps.capability_class]  # type: ignore[return-value]


def route_webpage(caps: ProviderCapabilities) -> WebpageRoute:
    return "text" if caps.capability_class == "T0" else "text+screenshot"


def route_image(caps: ProviderCapabilities) -> ImageRoute:
    return "text_description" if caps.capability_class == "T0" else "image"


def pdf_fallback(caps: ProviderCapabilities, *, has_pdf_bytes: bool, has_page_images: bool) -> PdfRoute:
    """The PDF fallback ladder: native document -> page images -> extracted text.

    Each rung needs its material: a D1 model without the original bytes gets the
    page images if a vision model could, else text. Text is always available.
    """
    if caps.supports_pdf_native and has_pdf_bytes:
        return "native"
    if caps.supports_vision and has_page_images:
        return "images"
    return "text"
