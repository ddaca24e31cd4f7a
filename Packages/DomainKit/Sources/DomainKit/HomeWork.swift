import Foundation
import GeoKit

/// A place proposed as someone's home or work, with the evidence for it. Wire names: `location` (`{lat, lon}`),
/// `days` (nights for home, weekdays for work), `timeSpent` (ms within those windows).
public struct ProposedPlace: Sendable, Hashable, Codable {
  /// The place: the time-weighted centre of its stays.
  public var location: Coordinate
  /// Nights (home) or weekdays (work) spent there.
  public var days: Int
  /// Time spent there within the night or weekday windows, ms.
  public var timeSpent: Int64

  /// A proposal.
  public init(location: Coordinate, days: Int, timeSpent: Int64) {
    self.location = location
    self.days = days
    self.timeSpent = timeSpent
  }
}

/// Home and work as the stays suggest them; nil where the stays don't say. Wire names: `home`, `work`.
public struct HomeWorkProposal: Sendable, Hashable, Codable {
  /// Where the person spends most nights.
  public var home: ProposedPlace?
  /// Where the person spends most weekday daytime, elsewhere than home.
  public var work: ProposedPlace?

  /// A proposal.
  public init(home: ProposedPlace? = nil, work: ProposedPlace? = nil) {
    self.home = home
    self.work = work
  }
}

/// The home and work a person set themselves; nil for each they left to the proposal. Wire names: `home`, `work`
/// (`{lat, lon}` or null).
public struct HomeWorkChoice: Sendable, Hashable, Codable {
  /// The home the person set.
  public var home: Coordinate?
  /// The work the person set.
  public var work: Coordinate?

  /// A choice.
  public init(home: Coordinate? = nil, work: Coordinate? = nil) {
    self.home = home
    self.work = work
  }
}

/// The rule that proposes home and work from stays, in the local time of each stay.
///
/// Stays whose centres lie within `radius` of a place's centre are that place. Each night (22:00–06:00 local) goes
/// to the place where most of it was spent; home is the place with the most nights (then the most time), if it has
/// at least `minimumDays`. Work is the place other than home with the most time in weekday daytime (Monday to
/// Friday, 08:00–19:00 local) over at least `minimumDays` different weekdays. Stays outside
/// `Timestamp.plausibleRange` or longer than 400 days are left out.
public struct HomeWorkRules: Sendable, Hashable {
  /// Stays this close (m) to a place's centre are at that place (default 150).
  public var radius: Double
  /// Fewest nights for home and weekdays for work (default 2).
  public var minimumDays: Int

  /// The rules.
  public init(radius: Double = 150, minimumDays: Int = 2) {
    self.radius = radius
    self.minimumDays = minimumDays
  }

  /// Home and work from `visits` (any order), each in the time zone `timeZone` gives it.
  public func propose(from visits: [Visit], timeZone: (Visit) -> TimeZone) -> HomeWorkProposal {
    // Places: stays grouped around time-weighted centres.
    var places: [(centre: Coordinate, weight: Double)] = []
    var placeOf: [Int] = []
    for visit in visits {
      let weight = Double(max(visit.duration, 1))
      if let index = places.indices.min(by: {
        places[$0].centre.haversineDistance(to: visit.location)
          < places[$1].centre.haversineDistance(to: visit.location)
      }), places[index].centre.haversineDistance(to: visit.location) <= radius {
        let place = places[index]
        places[index] = (
          Coordinate.midpoint(of: [(place.centre, place.weight), (visit.location, weight)]) ?? place.centre,
          place.weight + weight
        )
        placeOf.append(index)
      } else {
        places.append((visit.location, weight))
        placeOf.append(places.count - 1)
      }
    }
    // Time per place in each night and each weekday's daytime, keyed by the local day the window starts on.
    var nights: [String: [Int: Int64]] = [:]
    var weekdays: [Int: [String: Int64]] = [:]
    for (visit, place) in zip(visits, placeOf)
    where Timestamp.plausibleRange.contains(visit.arrival) && Timestamp.plausibleRange.contains(visit.departure)
      && visit.duration <= Self.longestStay
    {
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = timeZone(visit)
      let arrival = Timestamp.date(visit.arrival)
      guard var day = calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: arrival)) else {
        continue
      }
      let lastDay = calendar.startOfDay(for: Timestamp.date(visit.departure))
      while day <= lastDay {
        let components = calendar.dateComponents([.year, .month, .day, .weekday], from: day)
        let key = "\(components.year ?? 0)-\(components.month ?? 0)-\(components.day ?? 0)"
        if let time = overlap(visit, calendar, day, from: 22, to: 30), time > 0 {
          nights[key, default: [:]][place, default: 0] += time
        }
        if let weekday = components.weekday, (2...6).contains(weekday),
          let time = overlap(visit, calendar, day, from: 8, to: 19), time > 0
        {
          weekdays[place, default: [:]][key, default: 0] += time
        }
        guard let next = calendar.date(byAdding: .day, value: 1, to: day), next > day else { break }
        day = next
      }
    }
    var nightCount: [Int: (days: Int, time: Int64)] = [:]
    for night in nights.values {
      guard let best = night.max(by: { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }) else {
        continue
      }
      let current = nightCount[best.key] ?? (0, 0)
      nightCount[best.key] = (current.days + 1, current.time + best.value)
    }
    let home = nightCount.filter { $0.value.days >= minimumDays }.max {
      ($0.value.days, $0.value.time, -$0.key) < ($1.value.days, $1.value.time, -$1.key)
    }
    let work = weekdays.filter { $0.key != home?.key && $0.value.count >= minimumDays }
      .map { (place: $0.key, days: $0.value.count, time: $0.value.values.reduce(0, +)) }
      .max { ($0.time, -$0.place) < ($1.time, -$1.place) }
    return HomeWorkProposal(
      home: home.map { ProposedPlace(location: places[$0.key].centre, days: $0.value.days, timeSpent: $0.value.time) },
      work: work.map { ProposedPlace(location: places[$0.place].centre, days: $0.days, timeSpent: $0.time) })
  }

  /// Stays longer than this (400 days, ms) are no evidence: a phone left in a drawer.
  static let longestStay: Int64 = 400 * 86_400_000

  /// Home and work from `visits`, all in `timeZone`.
  public func propose(from visits: [Visit], timeZone: TimeZone) -> HomeWorkProposal {
    propose(from: visits) { _ in timeZone }
  }

  /// The time `visit` shares with `from`…`to` o'clock of `day` (hours past 24 reach into the next day), ms.
  private func overlap(_ visit: Visit, _ calendar: Calendar, _ day: Date, from: Int, to: Int) -> Int64? {
    guard let start = calendar.date(byAdding: .hour, value: from, to: day),
      let end = calendar.date(byAdding: .hour, value: to, to: day)
    else { return nil }
    let shared = min(visit.departure, Timestamp.milliseconds(end)) - max(visit.arrival, Timestamp.milliseconds(start))
    return max(shared, 0)
  }
}
