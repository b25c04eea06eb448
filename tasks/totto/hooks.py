"""ToTTo: linearize the highlighted cells with their headers, as in the shipped subset; the crowd
form's view of a sample (the table with its highlighted cells)."""

import re


def _headers(table: list[list[dict]], row: int, col: int) -> tuple[list[str], list[str]]:
    """Header cells above in the same column and left in the same row (spans ignored)."""
    col_headers = [r[col]["value"] for r in table[:row] if col < len(r) and r[col]["is_header"]]
    row_headers = [c["value"] for c in table[row][:col] if c["is_header"]]
    return col_headers, row_headers


def linearize(page_title: str, section_title: str, cells: list[dict]) -> str:
    """The subtable representation: titles, then each highlighted cell with its headers."""
    parts = [
        f"<page_title> {page_title} </page_title>",
        f"<section_title> {section_title} </section_title>",
        "<table>",
    ]
    for cell in cells:
        headers = "".join(f" <col_header> {h} </col_header>" for h in cell["col_headers"])
        headers += "".join(f" <row_header> {h} </row_header>" for h in cell["row_headers"])
        parts.append(f"<cell> {cell['value']}{headers} </cell>")
    parts.append("</table>")
    return " ".join(parts)


def from_hub(row: dict, index: int) -> dict:
    table = row["table"]
    cells = []
    for r, c in row["highlighted_cells"]:
        col_headers, row_headers = _headers(table, r, c)
        cells.append(
            {
                "value": table[r][c]["value"],
                "col_headers": col_headers,
                "row_headers": row_headers,
                "row": r,
                "col": c,
                "is_header": table[r][c]["is_header"],
            }
        )
    references = [a["final_sentence"] for a in row.get("sentence_annotations") or []] or list(
        row.get("references") or [row.get("target", "")]
    )
    return {
        "id": f"totto-{row.get('example_id', index)}",
        "prompt": linearize(row["table_page_title"], row["table_section_title"], cells),
        "references": references,
        "meta": {"highlighted_cell_details": cells, "table": table},
    }


TABLE_LABEL = "Table (highlighted cells in yellow; scroll a long table to see it all)"


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the page and section titles and the table, cells highlighted."""
    if "table" in meta:
        marked = {(cell["row"], cell["col"]) for cell in meta.get("highlighted_cell_details", [])}
        marked |= {tuple(pair) for pair in meta.get("highlighted_cells", [])}
        table = [
            [{**cell, "highlighted": (r, c) in marked} for c, cell in enumerate(row)]
            for r, row in enumerate(meta["table"])
        ]
        titles = meta.get("table_page_title", ""), meta.get("table_section_title", "")
    else:  # not from the shipped data: the highlighted cells from the linearized prompt
        table, titles = cells_from_prompt(prompt)
    return [
        {"name": "page_title", "label": "Wikipedia page", "text": titles[0]},
        {"name": "section_title", "label": "Section", "text": titles[1]},
        {"name": "table_json", "label": TABLE_LABEL, "table": table},
    ]


def cells_from_prompt(prompt: str) -> tuple[list[list[dict]], tuple[str, str]]:
    """A header row and a value row of highlighted cells from ToTTo's linearized subtable."""

    def tag(name: str, text: str) -> str:
        found = re.search(rf"<{name}>(.*?)</{name}>", text, re.DOTALL)
        return found.group(1).strip() if found else ""

    headers, values = [], []
    for cell in re.findall(r"<cell>(.*?)</cell>", prompt, re.DOTALL):
        value = re.split(r"<(?:col|row)_header>", cell)[0].strip()
        header = " / ".join(re.findall(r"<(?:col|row)_header>(.*?)</", cell)) or ""
        headers.append({"value": header.strip(), "is_header": True, "column_span": 1, "row_span": 1})
        values.append({"value": value, "is_header": False, "highlighted": True})
    table = [headers, values] if values else [[{"value": prompt, "is_header": False}]]
    return table, (tag("page_title", prompt), tag("section_title", prompt))


def copy_floor(row: dict) -> str:
    """The floor:copy output: the highlighted cells' values, in order."""
    cells = (row.get("meta") or {}).get("highlighted_cell_details") or []
    return " ".join(cell["value"] for cell in cells)
