"""One module per ``grue`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""
