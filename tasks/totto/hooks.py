"""ToTTo: linearize the highlighted cells with their headers, as in the shipped subset; the crowd
form's view of a sample (the table with its highlighted cells)."""

import re

Position = tuple[int, int]
"""A cell as (row, index in its row), or a place on the grid as (row, grid column)."""


def _grid(table: list[list[dict]]) -> tuple[dict[Position, Position], dict[Position, int]]:
    """The table on a grid honouring row and column spans: which cell (row, index in its row)
    covers each (row, grid column), and the grid column each cell starts at."""
    covering, start = {}, {}
    for r, row in enumerate(table):
        column = 0
        for c, cell in enumerate(row):
            while (r, column) in covering:  # covered by a cell spanning down from above
                column += 1
            start[(r, c)] = column
            for dr in range(cell.get("row_span", 1)):
                for dc in range(cell.get("column_span", 1)):
                    covering.setdefault((r + dr, column + dc), (r, c))
            column += cell.get("column_span", 1)
    return covering, start


def cell_details(table: list[list[dict]], highlighted: list[list[int]]) -> list[dict]:
    """Each highlighted cell with its headers, placed on the span-honouring grid: column headers
    are the header cells above it in its grid column from rows made only of headers (else the
    nearest header cell above), row headers the header cells left of it in its grid row; empty
    headers are left out."""
    covering, start = _grid(table)
    header_rows = {r for r, row in enumerate(table) if row and all(cell["is_header"] for cell in row)}

    def is_header(position: Position) -> bool:
        return table[position[0]][position[1]]["is_header"]

    def values(positions: list[Position]) -> list[str]:
        found = (table[r][c]["value"] for r, c in positions)
        return [value for value in found if value.strip()]

    details = []
    for r, c in highlighted:
        column = start[(r, c)]
        above = []
        for row in range(r):
            position = covering.get((row, column))
            if row in header_rows and position and position[0] != r and position not in above:
                above += [position] if is_header(position) else []
        if not above:  # no rows of headers above it: the nearest header cell above
            covers = (covering.get((row, column)) for row in range(r - 1, -1, -1))
            above = [p for p in covers if p and is_header(p)][:1]
        left = []
        for col in range(column):
            position = covering.get((r, col))
            if position and position != (r, c) and is_header(position) and position not in left:
                left.append(position)
        cell = table[r][c]
        details.append(
            {
                "row": r,
                "col": c,
                "value": cell["value"],
                "is_header": cell["is_header"],
                "col_headers": values(above),
                "row_headers": values(left),
            }
        )
    return details


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
    """A row of the official ToTTo files (or of the hub's copy, whose annotations are a dict of
    lists) in the shipped subset's form."""
    annotations = row.get("sentence_annotations") or []
    if isinstance(annotations, dict):
        finals = annotations.get("final_sentence") or []
    else:
        finals = [annotation["final_sentence"] for annotation in annotations]
    references = list(dict.fromkeys(finals)) or list(row.get("references") or [row.get("target", "")])
    cells = cell_details(row["table"], row["highlighted_cells"])
    return {
        "id": f"totto-{row.get('example_id', index)}",
        "prompt": linearize(row["table_page_title"], row["table_section_title"], cells),
        "references": references,
        "meta": {
            **{key: row[key] for key in META_KEYS if key in row},
            "highlighted_cell_details": cells,
        },
    }


META_KEYS = (
    "example_id",
    "table_page_title",
    "table_section_title",
    "table_section_text",
    "table_webpage_url",
    "highlighted_cells",
    "overlap_subset",
    "table",
)
"""What a shipped row's meta keeps of an official record (besides its cells' details)."""


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
