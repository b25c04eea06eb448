"""ToTTo: linearize the highlighted cells with their headers, as in the shipped subset."""


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
