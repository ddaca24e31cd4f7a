import DomainKit
import DomainKitTesting
import Foundation
import MeridianAPI
import Testing

/// `FixBatch.decodeCommonForm` gives exactly what `JSONDecoder` gives, or nothing.
@Suite struct FixBatchFastDecodingTests {
  /// A random valid fix: any subset of the optional fields, values across their ranges.
  static func randomFix(_ random: inout SplitMix64) throws -> LocationFix {
    func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? value() : nil }
    return try LocationFix(
      deviceID: maybe(DeviceID("device-\(Int.random(in: 0...9, using: &random))")),
      timestamp: Int64.random(in: 0...4_000_000_000_000, using: &random),
      latitude: Double.random(in: -90...90, using: &random), longitude: Double.random(in: -180..<180, using: &random),
      horizontalAccuracy: maybe(Double.random(in: 0...5000, using: &random)),
      verticalAccuracy: maybe(Double.random(in: 0...500, using: &random)),
      altitude: maybe(Double.random(in: -400...9000, using: &random)),
      speed: maybe(Double.random(in: 0...90, using: &random)),
      speedAccuracy: maybe(Double.random(in: 0...10, using: &random)),
      course: maybe(Double.random(in: 0..<360, using: &random)),
      floor: maybe(Int.random(in: -5...120, using: &random)),
      batteryLevel: maybe(Double.random(in: 0...1, using: &random)),
      batteryState: maybe(BatteryState.allCases.randomElement(using: &random)!),
      kind: FixKind.allCases.randomElement(using: &random)!,
      trigger: maybe(FixTrigger.allCases.randomElement(using: &random)!))
  }

  /// Both decoders on `text`: the fast one must agree with `JSONDecoder` or decline.
  static func expectAgreement(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> FixBatch? {
    let data = Data(text.utf8)
    let fast = FixBatch.decodeCommonForm(data)
    let reference = try? JSONDecoder().decode(FixBatch.self, from: data)
    if let fast {
      #expect(fast == reference, "fast decoding differs for \(text)", sourceLocation: sourceLocation)
    }
    return fast
  }

  @Test func randomBatchesDecodeLikeJSONDecoder() throws {
    var random = SplitMix64(seed: 20_261_124)
    for round in 0..<300 {
      let batch = FixBatch(
        deviceId: DeviceID("phone-\(round)"),
        fixes: try (0..<Int.random(in: 0...20, using: &random)).map { _ in
          try Self.randomFix(&random)
        })
      let encoder = JSONEncoder()
      if round % 2 == 0 { encoder.outputFormatting = .sortedKeys }
      if round % 3 == 0 { encoder.outputFormatting.insert(.prettyPrinted) }
      let text = String(decoding: try encoder.encode(batch), as: UTF8.self)
      // Every common-form batch takes the fast path, and gives what was encoded.
      #expect(Self.expectAgreement(text) == batch, "\(text)")
    }
  }

  @Test func anythingOutsideTheCommonFormIsLeftToJSONDecoder() {
    let fix = #"{"timestamp":1700000000000,"latitude":50.45,"longitude":30.52}"#
    #expect(Self.expectAgreement(#"{"deviceId":"p","fixes":[\#(fix)]}"#) != nil)
    #expect(Self.expectAgreement(#" {"fixes" : [ \#(fix) ] , "deviceId" : "p" } "#) != nil)
    let declined = [
      #"{"deviceId":"p","fixes":[\#(fix)]} x"#,  // trailing garbage
      #"{"deviceId":"p","fixes":[\#(fix),]}"#,  // trailing comma
      #"{"deviceId":"p","fixes":[\#(fix)]"#,  // truncated
      #"{"deviceId":"p"}"#,  // no fixes
      #"{"fixes":[]}"#,  // no device
      #"{"deviceId":"p","deviceId":"q","fixes":[]}"#,  // repeated key
      #"{"deviceId":"p","fixes":[],"extra":1}"#,  // unknown key (JSONDecoder ignores it)
      #"{"deviceId":"p\u0041","fixes":[]}"#,  // escape
      #"{"deviceId":"é","fixes":[]}"#,  // non-ASCII
      #"{"deviceId":null,"fixes":[]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1,"longitude":1,"speed":null}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":01,"longitude":1}]}"#,  // leading zero
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1.,"longitude":1}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":-,"longitude":1}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":+1,"longitude":1}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1e400,"longitude":1}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1e-400,"longitude":1}]}"#,  // underflows to 0
      #"{"deviceId":"p","fixes":[{"timestamp":1.5,"latitude":1,"longitude":1}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":99999999999999999999,"latitude":1,"longitude":1}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":91,"longitude":1}]}"#,  // fails validation
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1,"longitude":1,"kind":"teleport"}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1,"longitude":1,"refinedBy":{"timestamp":2}}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1}]}"#,  // no longitude
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1,"longitude":1,"latitude":2}]}"#,
      #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1,"longitude":1,"floor":1.5}]}"#,
      "", "[]", "{", "nul",
    ]
    for text in declined {
      #expect(Self.expectAgreement(text) == nil, "\(text)")
    }
    // The JSON number forms JSONDecoder reads are read alike.
    for number in ["0", "-0", "0.0e5", "12.5", "-12.5e1", "1E2", "1e-2", "0.000001", "1e-300"] {
      let text = #"{"deviceId":"p","fixes":[{"timestamp":1,"latitude":1,"longitude":\#(number)}]}"#
      #expect(Self.expectAgreement(text) != nil, "\(number)")
    }
  }

  @Test func receiptsReadAndWriteLikeJSONCoders() throws {
    var random = SplitMix64(seed: 11)
    for _ in 0..<200 {
      // A receipt withholds fixes now and then (privacy zones that store nothing): the field is written only then.
      let withheld = Int.random(in: -3...3, using: &random)
      let receipt = FixReceipt(
        accepted: Int.random(in: 0...1000, using: &random), duplicates: Int.random(in: 0...1000, using: &random),
        withheld: withheld > 0 ? withheld : nil)
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys  // without it, Foundation's key order changes from run to run
      let encoded = try encoder.encode(receipt)
      #expect(receipt.commonFormJSON == encoded)
      #expect(FixReceipt.decodeCommonForm(encoded) == receipt)
    }
    let spaced = Data(" {\n \"duplicates\" : 2 ,\t\"accepted\":-0 }\r\n".utf8)
    #expect(FixReceipt.decodeCommonForm(spaced) == (try JSONDecoder().decode(FixReceipt.self, from: spaced)))
    for declined in [
      #"{"accepted":1}"#, #"{"accepted":1,"duplicates":2,"extra":3}"#, #"{"accepted":1,"accepted":1,"duplicates":2}"#,
      #"{"accepted":1.5,"duplicates":2}"#, #"{"accepted":"1","duplicates":2}"#, #"{"accepted":1,"duplicates":2}x"#,
      #"{"accepted":99999999999999999999,"duplicates":2}"#, #"{"accepted":01,"duplicates":2}"#, "",
    ] {
      #expect(FixReceipt.decodeCommonForm(Data(declined.utf8)) == nil, "\(declined)")
    }
  }
}
