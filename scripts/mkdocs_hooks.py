"""MkDocs hooks for the manual (mkdocs.yml `hooks:`).

The console's pictures live in `screenshots/` at the top of the repository,
where the README shows them too; the pages link them as `../screenshots/…`,
which is right when a page is read on the forge. For the site, the pictures
are added to the build as files of their own and the links are rewritten to
them, so MkDocs checks every one (a missing picture fails the strict build).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
PICTURES = "screenshots"


def on_files(files: Files, config: Any) -> Files:
    for picture in sorted((ROOT / PICTURES).glob("*.svg")):
        files.append(
            File(
                f"{PICTURES}/{picture.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    depth = page.file.src_uri.count("/")
    return markdown.replace(f"](../{PICTURES}/", "](" + "../" * depth + f"{PICTURES}/")
