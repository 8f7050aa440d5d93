"""The widget's ESM and CSS: js/ in a checkout, kernel_nb/static/ inside a wheel (setup.py copies them there)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2] / "js"


def asset(name: str) -> str:
    """The text of `name` (e.g. "viewer.js"): from the installed package, else from the checkout's js/.

    Raises:
        FileNotFoundError: neither holds it (an install built without its assets).
    """
    packaged = resources.files("kernel_nb") / "static" / name
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = CHECKOUT / name
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"the viewer's {name} is neither in {packaged} nor in {checkout}: reinstall kernel-nb from its wheel"
    )
