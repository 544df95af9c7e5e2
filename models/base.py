"""The strict base model every contract and payload derives from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Immutable, closed models: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
