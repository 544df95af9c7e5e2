"""starter package."""
