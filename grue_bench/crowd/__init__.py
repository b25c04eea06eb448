"""Human evaluation on Mechanical Turk: templates, blinded batch export, results ingest, agreement
and win rates. The templates and example CSVs live in the top-level ``crowdsourcing/`` folder."""
