"""The one simulation core shared by every pillar. Imports no pillar."""
