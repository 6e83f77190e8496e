"""The model as plain data, and the readers and writers of model files."""
