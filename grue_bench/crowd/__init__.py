"""Human evaluation on Mechanical Turk: templates, blinded batch export, results ingest, agreement
and win rates. A task's Likert form and example rows are ``tasks/<id>/crowd.html`` and ``crowd.csv``; the
page they share and the pairwise form are in the top-level ``crowdsourcing/`` folder."""
