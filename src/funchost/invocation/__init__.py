"""Run user functions: arguments via the library's converters, context, outputs, middleware."""
