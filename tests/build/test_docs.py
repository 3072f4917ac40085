# SPDX-License-Identifier: GPL-2.0
"""Documentation/*.rst parse as reStructuredText without a warning: a table whose text
runs into a column margin, or a title whose over/underline is too short, renders wrong
(or not at all) wherever the documents are published."""
import glob
import io
import os

import docutils.core
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = sorted(glob.glob(os.path.join(REPO, "Documentation", "*.rst")))


def test_there_are_documents():
    assert len(DOCS) >= 5, DOCS


@pytest.mark.parametrize("path", DOCS, ids=os.path.basename)
def test_document_parses_cleanly(path):
    problems = io.StringIO()
    with open(path, encoding="utf-8") as f:
        docutils.core.publish_string(f.read(), source_path=path, writer_name="null",
                                     settings_overrides={"report_level": 2, "halt_level": 5,
                                                         "warning_stream": problems})
    assert problems.getvalue() == "", problems.getvalue()
