import PersistenceKit

extension PostgresSchema {
  /// Appends the operations migrations: the imported String Catalog.
  public static func appendOperationsMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 string catalog", stringCatalog))
  }

  /// The product's imported String Catalog (`meridian-admin i18n import-catalog`): the document as imported (one row)
  /// and each key's localization per language as Xcode's JSON, with the plain text when it has no variations.
  static let stringCatalog = """
    CREATE TABLE string_catalog_imports(
      id integer PRIMARY KEY CHECK (id = 1),
      source_language text NOT NULL,
      file_name text NOT NULL,
      document text NOT NULL,
      imported_at bigint NOT NULL
    );
    CREATE TABLE string_catalog(
      key text NOT NULL,
      language text NOT NULL,
      value text,
      value_json text NOT NULL,
      PRIMARY KEY (key, language)
    );
    """
}
