"""What every page adapter of every domain shares: who may see a project's pages."""
