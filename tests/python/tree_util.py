"""Helpers for walking Hatchet trees in tests."""


def child(node, name):
    for c in node.get("children", []):
        if c["frame"]["name"] == name:
            return c
    raise KeyError(f"{name!r} not under {node['frame']['name']!r}: "
                   f"{[c['frame']['name'] for c in node.get('children', [])]}")
