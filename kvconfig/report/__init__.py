"""Plans and findings as text, JSON, GitHub annotations and SARIF; explain, export, catalog."""
