import DomainKit
import Foundation
import GeoKit

/// What a labelled stay was in the life of the person the corpus made up.
public enum StayRole: String, Sendable, Hashable, CaseIterable {
  /// The night's place.
  case home
  /// The weekday's place.
  case work
  /// Anything else: lunch, a shop, a friend, a park.
  case other
}

/// A stay the corpus knows happened: where, from when to when, and what it was.
public struct LabelledStay: Sendable, Hashable {
  /// The true position (the fixes scatter around it).
  public var center: Coordinate
  /// When the person arrived, UTC ms.
  public var arrival: Int64
  /// When the person left, UTC ms.
  public var departure: Int64
  /// What the place was.
  public var role: StayRole

  /// A stay.
  public init(center: Coordinate, arrival: Int64, departure: Int64, role: StayRole) {
    self.center = center
    self.arrival = arrival
    self.departure = departure
    self.role = role
  }
}

/// A generated track of several days with the stays it holds.
public struct LabelledTrack: Sendable {
  /// A short name (`kyiv-3`).
  public var name: String
  /// The time zone the person lives by.
  public var timeZone: TimeZone
  /// Where the person sleeps.
  public var home: Coordinate
  /// Where the person works on weekdays.
  public var work: Coordinate
  /// The fixes a phone would have recorded, in time order.
  public var fixes: [LocationFix]
  /// The true stays, in time order.
  public var stays: [LabelledStay]
}

/// A labelled corpus for stay detection: days in the lives of made-up people in cities across time zones — nights
/// at home, weekdays at work with lunch and errands, weekend outings — recorded the way phones record: GPS jitter
/// of 5–35 m around each stay, outliers of 150–400 m (some with an honest bad accuracy, some not), a phone asleep
/// during long stays that reports every 10 minutes to 3 hours, walks and drives with traffic-light stops, stops of
/// up to two minutes that are not stays, and gaps of minutes with no fix while moving (a tunnel, a flat battery).
///
/// True stays last at least 10 minutes and lie at least 400 m apart; the same seed gives the same corpus.
public enum StayCorpus {
  /// A city a person of the corpus lives in.
  public struct City: Sendable, Hashable {
    /// Its name.
    public var name: String
    /// Its centre.
    public var center: Coordinate
    /// Its IANA time zone.
    public var timeZone: String
  }

  /// The cities, across latitudes and time zones.
  public static let cities: [City] = [
    City(name: "kyiv", center: Coordinate(uncheckedLatitude: 50.45, longitude: 30.52), timeZone: "Europe/Kyiv"),
    City(name: "london", center: Coordinate(uncheckedLatitude: 51.507, longitude: -0.128), timeZone: "Europe/London"),
    City(
      name: "nairobi", center: Coordinate(uncheckedLatitude: -1.286, longitude: 36.817), timeZone: "Africa/Nairobi"),
    City(
      name: "sydney", center: Coordinate(uncheckedLatitude: -33.87, longitude: 151.21), timeZone: "Australia/Sydney"),
    City(
      name: "reykjavik", center: Coordinate(uncheckedLatitude: 64.15, longitude: -21.94),
      timeZone: "Atlantic/Reykjavik"),
    City(
      name: "anchorage", center: Coordinate(uncheckedLatitude: 61.22, longitude: -149.9),
      timeZone: "America/Anchorage"),
    City(name: "quito", center: Coordinate(uncheckedLatitude: -0.18, longitude: -78.47), timeZone: "America/Guayaquil"),
    City(name: "tokyo", center: Coordinate(uncheckedLatitude: 35.68, longitude: 139.69), timeZone: "Asia/Tokyo"),
  ]

  /// `count` tracks of `days` days each (starting on Monday 2026-11-02, local time), people spread over ``cities``.
  public static func tracks(count: Int = 24, days: Int = 7, seed: UInt64 = 2026) -> [LabelledTrack] {
    (0..<max(count, 0)).map { track(index: $0, days: days, seed: seed) }
  }

  /// Track number `index` of the corpus of `seed`.
  public static func track(index: Int, days: Int, seed: UInt64) -> LabelledTrack {
    let city = cities[index % cities.count]
    let zone = TimeZone(identifier: city.timeZone) ?? .gmt
    var builder = Builder(seed: seed &+ UInt64(index) &* 0x9E37_79B9, timeZone: zone)
    let home = builder.place(near: city.center, from: 0, to: 5_000)
    let work =
      builder.chance(0.3)
      ? builder.place(near: home, from: 800, to: 2_000) : builder.place(near: home, from: 3_000, to: 12_000)
    builder.start(at: home, time: builder.local(day: 0, hour: 0))
    for day in 0..<max(days, 1) {
      builder.live(day: day, home: home, work: work)
    }
    builder.stay(until: builder.local(day: max(days, 1), hour: 0), role: .home)
    return LabelledTrack(
      name: "\(city.name)-\(index)", timeZone: zone, home: home, work: work, fixes: builder.fixes,
      stays: builder.stays)
  }

  /// Writes the day's fixes and stays.
  struct Builder {
    var random: SplitMix64
    let calendar: Calendar
    var time: Int64 = 0
    var position = Coordinate(uncheckedLatitude: 0, longitude: 0)
    var fixes: [LocationFix] = []
    var stays: [LabelledStay] = []

    init(seed: UInt64, timeZone: TimeZone) {
      random = SplitMix64(seed: seed)
      var calendar = Calendar(identifier: .gregorian)
      calendar.timeZone = timeZone
      self.calendar = calendar
    }

    mutating func start(at place: Coordinate, time: Int64) {
      position = place
      self.time = time
    }

    /// UTC ms of `hour` (fractional) local time on corpus day `day` (day 0 = Monday 2026-11-02).
    func local(day: Int, hour: Double) -> Int64 {
      let midnight =
        calendar.date(from: DateComponents(year: 2026, month: 11, day: 2 + day)) ?? Date(timeIntervalSince1970: 0)
      return Int64((midnight.timeIntervalSince1970 * 1000).rounded()) + Int64(hour * 3_600_000)
    }

    mutating func uniform(_ low: Double, _ high: Double) -> Double {
      low + (high - low) * Double(random.next() >> 11) / Double(1 << 53)
    }

    mutating func chance(_ probability: Double) -> Bool { uniform(0, 1) < probability }

    /// A standard normal variate (Box–Muller).
    mutating func gaussian() -> Double {
      let u = max(uniform(0, 1), 1e-12)
      return (-2 * log(u)).squareRoot() * cos(2 * .pi * uniform(0, 1))
    }

    /// A place `nearest`…`farthest` metres from `center`, at least 400 m from each of `avoiding`.
    mutating func place(
      near center: Coordinate, from nearest: Double, to farthest: Double, avoiding: [Coordinate] = []
    ) -> Coordinate {
      while true {
        let candidate = SyntheticTrack.destination(
          from: center, bearing: uniform(0, 360), distance: uniform(nearest, farthest))
        if avoiding.allSatisfy({ $0.haversineDistance(to: candidate) >= 400 }) { return candidate }
      }
    }

    /// Records a fix near `point`: Gaussian jitter of `sigma` metres, or now and then an outlier.
    mutating func record(_ point: Coordinate, sigma: Double, outliers: Double, speed: Double? = nil) {
      var accuracy = sigma * uniform(1, 2)
      var spot = SyntheticTrack.destination(
        from: point, bearing: uniform(0, 360), distance: abs(gaussian()) * sigma * 1.2)
      if chance(outliers) {
        spot = SyntheticTrack.destination(from: point, bearing: uniform(0, 360), distance: uniform(150, 400))
        accuracy = chance(0.5) ? uniform(250, 600) : uniform(20, 80)
      }
      if let fix = try? LocationFix(
        timestamp: time, latitude: spot.latitude, longitude: spot.longitude, horizontalAccuracy: accuracy,
        speed: speed)
      {
        fixes.append(fix)
      }
    }

    /// Stays where the person is until `end`: densely sampled, or (long stays, often) a phone that sleeps.
    mutating func stay(until end: Int64, role: StayRole) {
      guard end > time else { return }
      if let last = stays.last, last.departure == time, last.center == position {
        stays[stays.count - 1].departure = end  // the same stay goes on (the evening at home into the night)
      } else {
        stays.append(LabelledStay(center: position, arrival: time, departure: end, role: role))
      }
      let duration = end - time
      let sigma = uniform(5, 35)
      let arrival = time
      if duration >= 45 * 60_000, chance(0.6) {
        // Awake for the first minutes, then a fix every 10–60 minutes (hours for long stays).
        let awake = arrival + Int64(uniform(2, 5) * 60_000)
        while time < min(awake, end) {
          record(position, sigma: sigma, outliers: 0.02)
          time += Int64(uniform(10, 30) * 1000)
        }
        let longest = duration > 4 * 3_600_000 ? 180.0 : 60.0
        let wakesToLeave = chance(0.5)
        while time < end {
          record(position, sigma: sigma, outliers: 0.02)
          time += Int64(uniform(10, longest) * 60_000)
        }
        if wakesToLeave {
          time = max(end - Int64(uniform(1, 2) * 60_000), fixes.last.map { $0.timestamp + 1 } ?? arrival)
          while time < end {
            record(position, sigma: sigma, outliers: 0.02)
            time += Int64(uniform(10, 30) * 1000)
          }
        }
      } else {
        let interval = uniform(5, 60)
        while time < end {
          record(position, sigma: sigma, outliers: 0.02)
          time += Int64(interval * uniform(0.8, 1.2) * 1000)
        }
      }
      time = end
    }

    /// Moves to `destination` on foot (short ways) or by car, recording along the way.
    mutating func travel(to destination: Coordinate) {
      let start = position
      let length = start.haversineDistance(to: destination)
      let walking = length < 2_500
      let speed = walking ? uniform(1.0, 1.6) : uniform(8, 20)
      let interval = walking ? uniform(2, 15) : uniform(1, 10)
      let sigma = uniform(4, 10)
      // A stop at lights every so often; maybe one short stop (not a stay); maybe a gap with no fix.
      let stopEvery = walking ? uniform(300, 900) : uniform(400, 1_500)
      var nextStop = stopEvery
      var gapAt = chance(0.2) ? uniform(0.2, 0.8) * length : .infinity
      var travelled = 0.0
      var clock = Double(time)
      while travelled < length {
        let point = Self.interpolate(start, destination, fraction: travelled / length)
        time = Int64(clock)
        if travelled >= gapAt {
          // No fix for 1–5 minutes (walking) or 2–10 (driving); the person keeps moving.
          let gap = walking ? uniform(60, 300) : uniform(120, 600)
          travelled += gap * speed
          clock += gap * 1000
          gapAt = .infinity
          continue
        }
        record(point, sigma: sigma, outliers: 0.005, speed: speed)
        if travelled >= nextStop {
          let pause = walking && chance(0.3) ? uniform(30, 120) : uniform(20, 90)
          var paused = 0.0
          while paused < pause {
            paused += interval
            clock += interval * 1000
            time = Int64(clock)
            record(point, sigma: sigma, outliers: 0.005, speed: 0)
          }
          nextStop += stopEvery
        }
        travelled += speed * interval
        clock += interval * 1000
      }
      time = Int64(clock)
      position = destination
    }

    static func interpolate(_ from: Coordinate, _ to: Coordinate, fraction: Double) -> Coordinate {
      let t = min(max(fraction, 0), 1)
      return Coordinate(
        uncheckedLatitude: from.latitude + (to.latitude - from.latitude) * t,
        longitude: from.longitude + (to.longitude - from.longitude) * t)
    }

    /// Goes to `place`, stays there until `end` local hour (at least ten minutes), as `role`.
    mutating func visit(_ place: Coordinate, untilHour end: Double, day: Int, role: StayRole) {
      travel(to: place)
      stay(until: max(local(day: day, hour: end), time + 600_000), role: role)
    }

    /// One day: the morning at home, then work (weekdays) or outings (weekends), the evening at home.
    mutating func live(day: Int, home: Coordinate, work: Coordinate) {
      let weekday = day % 7 < 5
      if weekday {
        stay(until: local(day: day, hour: uniform(7, 8.5)), role: .home)
        visit(work, untilHour: uniform(12, 13), day: day, role: .work)
        if chance(0.6) {
          let lunch = place(near: work, from: 400, to: 900)
          visit(lunch, untilHour: uniform(12.75, 13.75), day: day, role: .other)
        }
        visit(work, untilHour: uniform(17, 18.5), day: day, role: .work)
        if chance(0.4) {
          let shop = place(near: position, from: 500, to: 3_000, avoiding: [home])
          visit(shop, untilHour: uniform(18.75, 19.25), day: day, role: .other)
        }
        visit(home, untilHour: uniform(19.5, 20), day: day, role: .home)
        if chance(0.2) {
          let friend = place(near: home, from: 1_000, to: 3_000)
          visit(friend, untilHour: uniform(21, 22.5), day: day, role: .other)
          travel(to: home)
        }
      } else {
        stay(until: local(day: day, hour: uniform(9, 11)), role: .home)
        var hour = 11.0
        for _ in 0..<Int(uniform(1, 4)) {
          let outing = place(near: position, from: 500, to: 8_000, avoiding: [home])
          hour += uniform(0.5, 2.5)
          visit(outing, untilHour: hour, day: day, role: .other)
        }
        travel(to: home)
      }
    }
  }
}
