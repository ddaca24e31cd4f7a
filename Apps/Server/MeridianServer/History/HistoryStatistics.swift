import DomainKit
import Foundation
import GeoKit
import MeridianAPI
import MeridianStore

/// The figures of `GET /v1/history/stats` from a history read oldest first, its stays and their gazetteer labels:
/// distance travelled, countries and towns stayed in, days tracked and days away from home, in all and per calendar
/// year and month — each fix and stay in the local time of where it was (its zone from the gazetteer), else in the
/// time zone asked for.
struct HistoryStatistics {
  /// The calendar the days, months and years are counted in.
  var calendar: Calendar
  /// Its time zone's IANA name, as asked for.
  var zoneName: String

  /// Statistics counted in the IANA time zone `timeZone` (UTC when nil or unknown).
  init(timeZone: String?) {
    var calendar = Calendar(identifier: .gregorian)
    let zone = timeZone.flatMap(TimeZone.init(identifier:))
    calendar.timeZone = zone ?? TimeZone(secondsFromGMT: 0) ?? .current
    self.calendar = calendar
    zoneName = zone == nil ? "UTC" : timeZone ?? "UTC"
  }

  /// The statistics of `fixes` (oldest first) and their stays `visits`, each with its label (nil: not placed), each
  /// fix and stay in its local time zone (`zones`, `visitZones`: parallel to them; nil or missing: ``calendar``'s).
  func stats(
    fixes: [LocationFix], zones: [TimeZone?] = [], visits: [(Visit, GazetteerLabel?)], visitZones: [TimeZone?] = [],
    languages: [String]
  ) -> HistoryStats {
    var days = DayKeys(calendar: calendar)
    var tallies: [String: Tally] = [:]
    func tally(_ keys: DayKeys.Keys, _ update: (inout Tally) -> Void) {
      for period in ["all", keys.year, keys.month] { update(&tallies[period, default: Tally()]) }
    }
    // Distance: a move counts when it is longer than the larger accuracy of its ends; otherwise it is jitter and
    // the next move is measured from the same fix.
    var anchor: LocationFix?
    var tracked: [String: DayKeys.Keys] = [:]
    for (position, fix) in fixes.enumerated() {
      let keys = days.keys(fix.timestamp, in: position < zones.count ? zones[position] : nil)
      tracked[keys.date] = keys
      var moved = 0.0
      if let from = anchor {
        let threshold = max(from.horizontalAccuracy ?? 0, fix.horizontalAccuracy ?? 0)
        // The haversine distance is within 0.56 % of the geodesic: below 99 % of the threshold the move is jitter
        // without the costlier geodesic.
        if from.coordinate.haversineDistance(to: fix.coordinate) > threshold * 0.99 {
          let distance = from.coordinate.geodesicDistance(to: fix.coordinate)
          if distance > threshold {
            moved = distance
            anchor = fix
          }
        }
      } else {
        anchor = fix
      }
      tally(keys) {
        $0.fixes += 1
        $0.distance += moved
      }
    }
    // Stays: where, and for how long in all (home is the town with the most time).
    var countryTime: [String: (time: Int64, area: HistoryPlace.Area)] = [:]
    var cityTime: [String: (time: Int64, area: HistoryPlace.Area)] = [:]
    for (visit, label) in visits {
      guard let label else { continue }
      let country = HistoryPlace.Area(code: label.country.code, name: label.country.name, level: "country")
      let city = HistoryPlace.Area(code: label.locality.code, name: label.locality.name, level: "locality")
      countryTime[country.code, default: (0, country)].time += visit.duration
      cityTime[city.code, default: (0, city)].time += visit.duration
    }
    func ranked(_ times: [String: (time: Int64, area: HistoryPlace.Area)]) -> [HistoryPlace.Area] {
      times.values.sorted { $0.time != $1.time ? $0.time > $1.time : $0.area.code < $1.area.code }.map(\.area)
    }
    let cities = ranked(cityTime)
    let home = cities.first
    var homeDays = Set<String>()
    for (position, (visit, label)) in visits.enumerated() {
      let zone = position < visitZones.count ? visitZones[position] : nil
      let keys = days.keys(visit.arrival, in: zone)
      tally(keys) {
        $0.visits += 1
        if let label {
          $0.countries.insert(label.country.code)
          $0.cities.insert(label.locality.code)
        }
      }
      guard let home, label?.locality.code == home.code else { continue }
      // Every day the stay at home touches, up to a year of them.
      var day = keys
      for _ in 0..<366 {
        homeDays.insert(day.date)
        guard day.end <= visit.departure else { break }
        day = days.keys(day.end, in: zone)
      }
    }
    for keys in tracked.values {
      let away = !homeDays.contains(keys.date)
      tally(keys) {
        $0.daysTracked += 1
        if away { $0.daysAway += 1 }
      }
    }
    func periods(_ length: Int) -> [HistoryStatsPeriod] {
      tallies.filter { $0.key.count == length }.sorted { $0.key < $1.key }.map { $0.value.period($0.key) }
    }
    return HistoryStats(
      timeZone: zoneName, languages: languages, home: home,
      total: (tallies["all"] ?? Tally()).period("all"), years: periods(4), months: periods(7),
      countries: ranked(countryTime), cities: cities)
  }

  /// One period's running figures.
  struct Tally {
    var distance = 0.0
    var fixes = 0
    var visits = 0
    var countries = Set<String>()
    var cities = Set<String>()
    var daysTracked = 0
    var daysAway = 0

    func period(_ name: String) -> HistoryStatsPeriod {
      HistoryStatsPeriod(
        period: name, distance: distance, fixes: fixes, visits: visits, countries: countries.count,
        cities: cities.count, daysTracked: daysTracked, daysAway: daysAway)
    }
  }

  /// The calendar day, month and year of a time in a time zone (the statistics' own when none is given),
  /// remembering the last day so that a history read in order asks the calendar once per day, not once per fix.
  struct DayKeys {
    struct Keys {
      /// The local date, `2024-01-31`: a day tracked in two zones is one day.
      var date: String
      /// The day's end, UTC ms.
      var end: Int64
      /// `2024-01`, `2024`.
      var month: String
      var year: String
    }

    let calendar: Calendar
    private var calendars: [String: Calendar] = [:]
    private var last: (zone: String, start: Int64, keys: Keys)?

    init(calendar: Calendar) { self.calendar = calendar }

    mutating func keys(_ time: Int64, in zone: TimeZone? = nil) -> Keys {
      let zone = zone ?? calendar.timeZone
      if let last, last.zone == zone.identifier, (last.start..<last.keys.end).contains(time) { return last.keys }
      var local = calendars[zone.identifier] ?? calendar
      local.timeZone = zone
      calendars[zone.identifier] = local
      let date = Timestamp.date(time)
      let interval = local.dateInterval(of: .day, for: date) ?? DateInterval(start: date, duration: 86_400)
      let parts = local.dateComponents([.year, .month, .day], from: date)
      let year = String(format: "%04d", parts.year ?? 0)
      let month = year + String(format: "-%02d", parts.month ?? 0)
      let keys = Keys(
        date: month + String(format: "-%02d", parts.day ?? 0), end: Timestamp.milliseconds(interval.end),
        month: month, year: year)
      last = (zone.identifier, Timestamp.milliseconds(interval.start), keys)
      return keys
    }
  }
}
