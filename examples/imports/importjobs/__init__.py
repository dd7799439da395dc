"""The import/OCR pipeline's own code: one concept per module (see docs/pipeline.md)."""
