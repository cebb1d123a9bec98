"""The manual's links hold: every relative link in the Markdown files names
a file of the repository, and every #anchor a heading of the file it points
to (GitHub's rule: the heading lowercased, punctuation but - and _ dropped,
spaces as -, a -1, -2 ... for repeats)."""

import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files():
    for folder in (ROOT, os.path.join(ROOT, "docs"), os.path.join(ROOT, "results"),
                   os.path.join(ROOT, "python")):
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".md"):
                    yield os.path.join(folder, name)


def anchors(path):
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6} (.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def test_relative_links_and_anchors():
    broken = []
    for path in markdown_files():
        text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            where = os.path.relpath(path, ROOT)
            if not os.path.exists(dest):
                broken.append("%s: %s (no such file)" % (where, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                broken.append("%s: %s (no such heading)" % (where, target))
    assert not broken, "\n".join(broken)
