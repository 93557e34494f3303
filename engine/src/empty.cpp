// Placeholder so an area without sources still forms a library.
