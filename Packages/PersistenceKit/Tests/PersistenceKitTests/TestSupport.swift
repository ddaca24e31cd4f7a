import Foundation
import PersistenceKitStrings

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
  let url: URL

  init() throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent("PersistenceKitTests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  func path(_ name: String) -> String { url.appendingPathComponent(name).path }

  func remove() { try? FileManager.default.removeItem(at: url) }
}

enum Fixtures {
  static func url(_ name: String) throws -> URL {
    guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Resources") else {
      throw CocoaError(.fileNoSuchFile)
    }
    return url
  }
}

extension StringCatalog {
  /// A catalog with one key whose only localization, in `language`, has the given variations.
  static func single(key: String, language: String, variations: Variations) -> StringCatalog {
    StringCatalog(
      sourceLanguage: "en",
      strings: [key: Entry(localizations: [language: Localization(variations: variations)])],
      fallbackLanguages: [language]
    )
  }
}

extension StringCatalog.Variations {
  /// Plural variations from category names to texts.
  static func plural(_ forms: [String: String]) -> Self {
    Self(plural: forms.mapValues { StringCatalog.Variant(stringUnit: .init(value: $0)) })
  }
}
