"""Refresh the command outputs shown in README.md by running the commands (so none is typed by hand).

Every example of the README runs in order in one scratch folder holding only `examples/` (see
readme_examples.py), so the README's own commands make the inputs later ones read, as on a fresh clone.
The code block after each marker `<!-- output: COMMAND -->` becomes `$ COMMAND`, its output (NO_COLOR=1,
COLUMNS=100), and a line with its exit code if not 0.

    python scripts/update_readme.py
"""

from __future__ import annotations

import sys

from readme_examples import MARKER, ROOT, examples, run, scratch


def shown(command: str, done) -> str:  # type: ignore[no-untyped-def]
    text = "\n".join(line.rstrip() for line in (done.stdout + done.stderr).rstrip().splitlines())
    code = f"\n$ echo $?\n{done.returncode}" if done.returncode else ""
    return f"$ {command}\n{text}{code}"


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    outputs = {}
    with scratch() as folder:
        for example in examples(text):
            done = run(example, folder)
            if example.kind == "output":
                outputs[example.code] = shown(example.code, done)
    text = MARKER.sub(lambda m: f"<!-- output: {m.group(1)} -->\n```\n{outputs[m.group(1)]}\n```\n", text)
    readme.write_text(text)
    print(f"refreshed {len(outputs)} outputs in {readme}", file=sys.stderr)


if __name__ == "__main__":
    main()
