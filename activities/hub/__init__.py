"""Layer ``hub``: the Hub side of worker enrollment and decommission through the konduktor CLI."""
