#!/usr/bin/env python3
"""Print the text of every page of a PDF, separated by form feeds."""
import sys

from pypdf import PdfReader


def main(path: str) -> None:
    reader = PdfReader(path)
    for page in reader.pages:
        print(page.extract_text() or "")
        print("\f")


if __name__ == "__main__":
    main(sys.argv[1])
