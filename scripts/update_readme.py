"""Refresh the command outputs shown in README.md and the site's pages (docs/) by running the commands (so none
is typed by hand).

Every example of the documentation runs in order (readme_examples.PAGES) in one scratch folder holding only
`examples/` (see readme_examples.py), so its own commands make the inputs later ones read, as on a fresh clone.
The code block after each marker `<!-- output: COMMAND -->` becomes `$ COMMAND`, its output (NO_COLOR=1,
COLUMNS=100), and a line with its exit code if not 0. The table of the model types tfm reads is made from the
families' registry (families_table.py).

    python scripts/update_readme.py
"""

from __future__ import annotations

import sys

from families_table import with_table
from readme_examples import MARKER, PAGES, ROOT, documentation, examples, run, scratch


def shown(command: str, done) -> str:  # type: ignore[no-untyped-def]
    text = "\n".join(line.rstrip() for line in (done.stdout + done.stderr).rstrip().splitlines())
    code = f"\n$ echo $?\n{done.returncode}" if done.returncode else ""
    return f"$ {command}\n{text}{code}"


def main() -> None:
    outputs = {}
    with scratch() as folder:
        for example in examples(documentation()):
            done = run(example, folder)
            if example.kind == "output":
                outputs[example.code] = shown(example.code, done)
    for page in PAGES:
        path = ROOT / page
        block = lambda m: f"<!-- output: {m.group(1)} -->\n```\n{outputs[m.group(1)]}\n```\n"  # noqa: E731
        path.write_text(with_table(MARKER.sub(block, path.read_text())))
    print(f"refreshed {len(outputs)} outputs in {len(PAGES)} pages", file=sys.stderr)


if __name__ == "__main__":
    main()
