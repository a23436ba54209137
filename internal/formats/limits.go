package formats
