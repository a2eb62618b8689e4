"""The benchmark: the default catalog (catalog), generation, verification and measurement of
each routine (measure), the published figures beside ours (papers), and the results as tables,
JSON (report) and a plot (plot)."""
