"""The input as Python code sees it."""

from typing import Any, Dict, SupportsIndex, Union


class Input(str):
    """One input of the experiment, as a validator's ``i`` or a system's
    argument sees it: a ``str`` of its text (its ``text`` field, or all its
    fields joined by newlines), so the paper's ``"Thank you" in i`` works,
    with ``.id`` and ``.fields`` (a dict). ``i["lang"]`` and ``i.lang``
    read a field; an integer or slice indexes the text as a str does."""

    id: str
    fields: Dict[str, Any]

    def __new__(cls, id: str, text: str, fields: Dict[str, Any]) -> "Input":
        self = super().__new__(cls, text)
        self.id = id
        self.fields = fields
        return self

    @classmethod
    def _from_json(cls, id: str, text: str, fields_json: str) -> "Input":
        import json

        return cls(id, text, json.loads(fields_json))

    def __getitem__(self, key: Union[str, SupportsIndex, slice]) -> Any:
        if isinstance(key, str):
            return self.fields[key]
        return str.__getitem__(self, key)

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"input {self.__dict__.get('id')!r} has no field {name!r}")

    def get(self, key: str, default: Any = None) -> Any:
        """A field, or ``default``."""
        return self.fields.get(key, default)
