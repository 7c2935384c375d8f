"""Every example of the documentation (the README and the site's pages) runs, in the order shown, in a folder
holding only `examples/` (a fresh clone), and exits with the code shown; the site's nav is the pages' order."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))

from readme_examples import PAGES, ROOT, documentation, examples, run, scratch  # noqa: E402

README = documentation()


def test_the_site_lists_every_page_in_the_order_the_examples_run():
    import yaml

    def pages(nav):
        for entry in nav:
            for value in entry.values():
                yield from pages(value) if isinstance(value, list) else [f"docs/{value}"]

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    assert ["README.md", *pages(nav)] == PAGES
    assert sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")) == sorted(PAGES[1:])


def test_the_readme_is_short_and_links_every_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 400
    assert all(f"({page})" in text for page in PAGES[1:] if page != "docs/index.md")


def test_the_readme_has_examples_of_every_kind():
    kinds = {e.kind for e in examples(README)}
    assert kinds == {"output", "bash"}  # the library's examples are docs/library.md's doctests (tests/library)
    assert README.count("```pycon") >= 8


@pytest.mark.slow
def test_every_readme_example_runs_in_order_on_a_fresh_clone():
    with scratch() as folder:
        for example in examples(README):
            done = run(example, folder)
            assert done.returncode == example.exit_code, (example.code, done.stdout[-2000:], done.stderr[-2000:])
            assert "Traceback" not in done.stderr, (example.code, done.stderr)


def test_the_docs_name_what_a_user_has(runner):
    """No path outside the clone, no install of an unrelated package named tfm, and the library page asks for
    the attention weights of the input it ran."""
    from transformer_cli.cli import app

    assert "../shared" not in README
    help_text = runner.invoke(app, ["bench", "--help"]).stdout
    assert "tfm[bench]" not in help_text and "pip install -e '.[bench]'" in help_text
    library = (ROOT / "docs" / "library.md").read_text()
    ran = library.split("net(")[1].split(")")[0]
    assert f"net.attention_weights({ran})" in library
