import Testing

@testable import MeridianServer

/// The one `Accept-Language` reader, as the web app's texts and the history's place names use it.
@Suite struct AcceptLanguageTests {
  @Test func rangesComeByWeightThenInTheHeadersOrder() {
    #expect(AcceptLanguage("de-DE,ru;q=0.8,en;q=0.7").ranges == ["de-DE", "ru", "en"])
    #expect(AcceptLanguage("en;q=0.5, uk-UA, ru;Q=0.9").ranges == ["uk-UA", "ru", "en"])
    #expect(AcceptLanguage("fr;q=0.5,de;q=0.5").ranges == ["fr", "de"])
    #expect(AcceptLanguage("ru;q=0, *, uk;q=0.1").ranges == ["uk"])
    #expect(AcceptLanguage(nil).ranges.isEmpty)
    #expect(AcceptLanguage(" , ;q=1,").ranges.isEmpty)
  }

  @Test func theBestOfferedLanguageIsNamedByARangeOrItsPrimarySubtag() {
    let offered = ["en", "ru", "uk"]
    #expect(AcceptLanguage("uk-UA,uk;q=0.9,en;q=0.5").best(of: offered) == "uk")
    #expect(AcceptLanguage("de-DE,en;q=0.5,ru;q=0.8").best(of: offered) == "ru")
    #expect(AcceptLanguage("RU-ru").best(of: offered) == "ru")
    #expect(AcceptLanguage("fr-FR").best(of: offered) == nil)
    #expect(WebAppFeature.language(requested: nil, acceptLanguage: "fr-FR", offered: offered) == "en")
    #expect(WebAppFeature.language(requested: "uk", acceptLanguage: "ru", offered: offered) == "uk")
  }

  @Test func historyNamesTryTheRequestedLanguageThenTheHeaderThenEnglish() {
    #expect(
      HistoryGeoFeature.languages(requested: nil, acceptLanguage: "ru-RU,uk;q=0.8,*;q=0.5")
        == ["ru_ru", "ru", "uk", "en"])
    #expect(HistoryGeoFeature.languages(requested: "uk", acceptLanguage: "en;q=0.2, ru") == ["uk", "ru", "en"])
  }
}
