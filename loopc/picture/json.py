"""The loops as JSON: :meth:`NetworkInfo.to_dict` with the picture's title first.

Keys keep the data model's order and the text is indented, so two runs' files diff line by line.
"""

from __future__ import annotations

import json

from loopc.fingerprint import NetworkInfo


def json_document(info: NetworkInfo, title: str = "") -> str:
    """``{"title": ..., "layers": ..., "loops": [...]}``; read it back with ``NetworkInfo.from_dict``."""
    return json.dumps({"title": title, **info.to_dict()}, indent=2, ensure_ascii=False)
