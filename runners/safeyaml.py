"""The one YAML reader for plan documents: no aliases, bounded size.

A YAML alias repeats a node by reference; nested aliases make a 400-byte
document expand to billions of nodes (an "alias bomb"). Plans never need
them, so the reader refuses any alias before anything is expanded, and
refuses documents past MAX_DOCUMENT_BYTES before parsing at all.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DOCUMENT_BYTES = 1024 * 1024


class AliasRefused(yaml.YAMLError):
    def __init__(self, mark):
        super().__init__("YAML aliases (*name) are not allowed in plan documents")
        self.problem = "YAML aliases (*name) are not allowed in plan documents"
        self.problem_mark = mark


class DocumentTooLarge(yaml.YAMLError):
    def __init__(self, size: int):
        self.problem = f"the document is {size} bytes; the limit is {MAX_DOCUMENT_BYTES} bytes"
        self.problem_mark = None
        super().__init__(self.problem)


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise AliasRefused(self.peek_event().start_mark)
        return super().compose_node(parent, index)


def load(text: str | bytes) -> Any:
    """yaml.safe_load without aliases and with a size cap (raises yaml.YAMLError)."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentTooLarge(size)
    loader = _NoAliasLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
