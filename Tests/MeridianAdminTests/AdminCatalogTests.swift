import Foundation
import GRDB
import MeridianServer
import MeridianStore
import MeridianStoreSQLite
import PersistenceKit
import Testing

/// A hand-written catalog in Xcode's exact format: a plain string, a plural, a substitution with plural variations,
/// and a key Ukrainian lacks (a warning, not an error).
let exampleCatalog = """
  {
    "sourceLanguage" : "en",
    "strings" : {
      "%@ has %#@friends@" : {
        "localizations" : {
          "en" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "%1$@ has %2$#@friends@"
            },
            "substitutions" : {
              "friends" : {
                "argNum" : 2,
                "formatSpecifier" : "lld",
                "variations" : {
                  "plural" : {
                    "one" : {
                      "stringUnit" : {
                        "state" : "translated",
                        "value" : "%arg friend"
                      }
                    },
                    "other" : {
                      "stringUnit" : {
                        "state" : "translated",
                        "value" : "%arg friends"
                      }
                    }
                  }
                }
              }
            }
          },
          "uk" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "%1$@ має %2$#@friends@"
            },
            "substitutions" : {
              "friends" : {
                "argNum" : 2,
                "formatSpecifier" : "lld",
                "variations" : {
                  "plural" : {
                    "few" : {
                      "stringUnit" : {
                        "state" : "translated",
                        "value" : "%arg друзі"
                      }
                    },
                    "many" : {
                      "stringUnit" : {
                        "state" : "translated",
                        "value" : "%arg друзів"
                      }
                    },
                    "one" : {
                      "stringUnit" : {
                        "state" : "translated",
                        "value" : "%arg друг"
                      }
                    },
                    "other" : {
                      "stringUnit" : {
                        "state" : "translated",
                        "value" : "%arg друга"
                      }
                    }
                  }
                }
              }
            }
          }
        }
      },
      "Friend nearby" : {
        "extractionState" : "manual",
        "localizations" : {
          "en" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "Friend nearby"
            }
          },
          "uk" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "Друг поруч"
            }
          }
        }
      },
      "points" : {
        "extractionState" : "manual",
        "localizations" : {
          "en" : {
            "variations" : {
              "plural" : {
                "one" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld point"
                  }
                },
                "other" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld points"
                  }
                }
              }
            }
          },
          "uk" : {
            "variations" : {
              "plural" : {
                "few" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld бали"
                  }
                },
                "many" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld балів"
                  }
                },
                "one" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld бал"
                  }
                },
                "other" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld бала"
                  }
                }
              }
            }
          }
        }
      },
      "Sign out" : {
        "extractionState" : "manual",
        "localizations" : {
          "en" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "Sign out"
            }
          }
        }
      }
    },
    "version" : "1.0"
  }
  """

/// Ukrainian lacks the plural forms `few` and `many`, and its greeting takes a number where English takes a string.
let brokenCatalog = """
  {
    "sourceLanguage" : "en",
    "strings" : {
      "greeting" : {
        "extractionState" : "manual",
        "localizations" : {
          "en" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "Hello, %@!"
            }
          },
          "uk" : {
            "stringUnit" : {
              "state" : "translated",
              "value" : "Привіт, %lld!"
            }
          }
        }
      },
      "points" : {
        "extractionState" : "manual",
        "localizations" : {
          "en" : {
            "variations" : {
              "plural" : {
                "one" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld point"
                  }
                },
                "other" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld points"
                  }
                }
              }
            }
          },
          "uk" : {
            "variations" : {
              "plural" : {
                "one" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld бал"
                  }
                },
                "other" : {
                  "stringUnit" : {
                    "state" : "translated",
                    "value" : "%lld бала"
                  }
                }
              }
            }
          }
        }
      }
    },
    "version" : "1.0"
  }
  """

@Suite("meridian-admin i18n import-catalog")
struct AdminCatalogTests {
  @Test func importValidatesStoresAndReplaces() async throws {
    let sandbox = try AdminSandbox()
    let store = try sandbox.store()
    let good = sandbox.path("Localizable.xcstrings")
    try exampleCatalog.write(toFile: good, atomically: true, encoding: .utf8)
    let broken = sandbox.path("Broken.xcstrings")
    try brokenCatalog.write(toFile: broken, atomically: true, encoding: .utf8)

    // Before any import, `i18n check` says so and passes.
    let before = try await sandbox.admin(["i18n", "check"])
    #expect(before.status == 0, "\(before)")
    #expect(before.stdout.contains("No string catalog imported."), "\(before)")

    let imported = try await sandbox.admin(["i18n", "import-catalog", good, "--json"])
    #expect(imported.status == 0, "\(imported)")
    let report = try imported.object()
    #expect(report["imported"] as? Bool == true)
    #expect(report["keys"] as? Int == 4)
    #expect(report["sourceLanguage"] as? String == "en")
    #expect((report["errors"] as? [String])?.isEmpty == true)
    #expect(report["warnings"] as? [String] == ["uk: 'Sign out' is not translated"], "\(imported)")
    #expect(imported.stderr.contains("warning: uk: 'Sign out' is not translated"), "\(imported)")
    let languages = try #require(report["languages"] as? [[String: Any]])
    #expect(languages.compactMap { $0["language"] as? String } == ["en", "uk"])
    #expect(languages.compactMap { $0["translated"] as? Int } == [4, 3])
    #expect(languages.compactMap { $0["percent"] as? Double } == [100, 75])

    // One row per key and language: the plain text when there is one, Xcode's JSON always.
    let rows = try store.database.read { db in
      try Row.fetchAll(db, sql: "SELECT key, language, value, value_json FROM string_catalog ORDER BY key, language")
    }
    #expect(rows.count == 7)
    let plain = try await store.database.read { db in
      try String.fetchOne(
        db, sql: "SELECT value FROM string_catalog WHERE key = 'Friend nearby' AND language = 'uk'")
    }
    #expect(plain == "Друг поруч")
    let pluralJSON = try #require(
      try store.database.read { db in
        try Row.fetchOne(
          db, sql: "SELECT value, value_json FROM string_catalog WHERE key = 'points' AND language = 'uk'")
      })
    #expect((pluralJSON["value"] as String?) == nil)
    let localization = try #require(
      try JSONSerialization.jsonObject(with: Data((pluralJSON["value_json"] as String).utf8)) as? [String: Any])
    let plural = (localization["variations"] as? [String: Any])?["plural"] as? [String: Any]
    #expect(Set(plural?.keys.map { $0 } ?? []) == ["one", "few", "many", "other"])

    // `i18n languages` lists the catalog's completeness next to the localized columns'.
    let listed = try await sandbox.admin(["i18n", "languages", "--json"])
    #expect(listed.status == 0, "\(listed)")
    let entries = try #require(try listed.json() as? [[String: Any]])
    let uk = try #require(entries.first { $0["language"] as? String == "uk" })
    #expect(uk["hasColumns"] as? Bool == true)
    #expect((uk["catalog"] as? [String: Any])?["percent"] as? Double == 75)
    let table = try await sandbox.admin(["i18n", "languages"])
    #expect(table.stdout.contains("catalog"), "\(table)")
    #expect(table.stdout.contains("3 of 4"), "\(table)")

    // `i18n check` validates the stored catalog: the missing translation fails it.
    let check = try await sandbox.admin(["i18n", "check", "--json"])
    #expect(check.status == 1, "\(check)")
    let checked = try check.object()
    #expect(checked["ok"] as? Bool == false)
    let catalog = try #require(checked["catalog"] as? [String: Any])
    #expect(catalog["file"] as? String == "Localizable.xcstrings")
    #expect(catalog["warnings"] as? [String] == ["uk: 'Sign out' is not translated"])
    #expect((checked["missing"] as? [Any])?.isEmpty == true)

    // A broken catalog is refused, names its errors, and the stored one stays.
    let refused = try await sandbox.admin(["i18n", "import-catalog", broken, "--json"])
    #expect(refused.status == 1, "\(refused)")
    let refusal = try refused.object()
    #expect(refusal["imported"] as? Bool == false)
    let errors = try #require(refusal["errors"] as? [String])
    #expect(errors.contains("uk: 'points' lacks plural forms few, many"), "\(errors)")
    #expect(errors.contains("uk: 'greeting' has arguments [1:integer] but the source has [1:object]"), "\(errors)")
    let readable = try await sandbox.admin(["i18n", "import-catalog", broken])
    #expect(readable.status == 1, "\(readable)")
    #expect(readable.stdout.contains("nothing was imported"), "\(readable)")
    let kept = try await store.database.read { db in
      try String.fetchAll(db, sql: "SELECT DISTINCT key FROM string_catalog ORDER BY key")
    }
    #expect(kept == ["%@ has %#@friends@", "Friend nearby", "Sign out", "points"])

    // A second import replaces the first entirely.
    var document = try #require(try JSONSerialization.jsonObject(with: Data(brokenCatalog.utf8)) as? [String: Any])
    var strings = try #require(document["strings"] as? [String: Any])
    strings["greeting"] = [
      "localizations": [
        "en": ["stringUnit": ["state": "translated", "value": "Hello, %@!"]],
        "uk": ["stringUnit": ["state": "translated", "value": "Привіт, %@!"]],
      ]
    ]
    func unit(_ value: String) -> [String: Any] { ["stringUnit": ["state": "translated", "value": value]] }
    strings["points"] = [
      "localizations": [
        "en": ["variations": ["plural": ["one": unit("%lld point"), "other": unit("%lld points")]]],
        "uk": [
          "variations": [
            "plural": [
              "one": unit("%lld бал"), "few": unit("%lld бали"), "many": unit("%lld балів"),
              "other": unit("%lld бала"),
            ]
          ]
        ],
      ]
    ]
    document["strings"] = strings
    let fixed = String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self)
    let replacement = sandbox.path("Fixed.xcstrings")
    try fixed.write(toFile: replacement, atomically: true, encoding: .utf8)
    let replaced = try await sandbox.admin(["i18n", "import-catalog", replacement])
    #expect(replaced.status == 0, "\(replaced)")
    #expect(replaced.stdout.contains("Imported 2 keys in 2 languages"), "\(replaced)")
    let now = try await store.database.read { db in
      try String.fetchAll(db, sql: "SELECT DISTINCT key FROM string_catalog ORDER BY key")
    }
    #expect(now == ["greeting", "points"])
    let clean = try await sandbox.admin(["i18n", "check"])
    #expect(clean.status == 0, "\(clean)")
    #expect(clean.stdout.contains("String catalog Fixed.xcstrings"), "\(clean)")

    // Not a catalog, and no file.
    let notJSON = sandbox.path("notes.xcstrings")
    try "not json".write(toFile: notJSON, atomically: true, encoding: .utf8)
    let bad = try await sandbox.admin(["i18n", "import-catalog", notJSON])
    #expect(bad.status == 1, "\(bad)")
    #expect(bad.stderr.contains("not a String Catalog"), "\(bad)")
    let missing = try await sandbox.admin(["i18n", "import-catalog", sandbox.path("none.xcstrings")])
    #expect(missing.status == 3, "\(missing)")
  }
}
