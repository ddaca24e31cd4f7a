import Foundation

extension QRCode {
  /// The light border readers need around a symbol, modules (the standard's minimum).
  public static let quietZone = 4

  /// An SVG document: one path of unit squares in a view box of the symbol plus its quiet zone, `scale` pixels per
  /// module as its width and height.
  public func svg(scale: Int = 8) -> String {
    let side = size + 2 * Self.quietZone
    var path = ""
    for row in 0..<size {
      var column = 0
      while column < size {
        guard isDark(row: row, column: column) else {
          column += 1
          continue
        }
        // One rectangle per horizontal run of dark modules.
        var end = column
        while end < size, isDark(row: row, column: end) { end += 1 }
        path += "M\(column + Self.quietZone) \(row + Self.quietZone)h\(end - column)v1h-\(end - column)z"
        column = end
      }
    }
    return """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(side * scale)" height="\(side * scale)" \
      viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges">
      <rect width="\(side)" height="\(side)" fill="#ffffff"/>
      <path d="\(path)" fill="#000000"/>
      </svg>

      """
  }

  /// A PNG image (1-bit greyscale), `scale` pixels per module, with the quiet zone.
  public func png(scale: Int = 8) -> Data {
    let side = (size + 2 * Self.quietZone) * scale
    let rowBytes = (side + 7) / 8
    var pixels = [UInt8]()
    pixels.reserveCapacity(side * rowBytes)
    for y in 0..<side {
      var row = [UInt8](repeating: 0, count: rowBytes)
      let moduleRow = y / scale - Self.quietZone
      for x in 0..<side where !isDark(row: moduleRow, column: x / scale - Self.quietZone) {
        // Greyscale 1-bit: 1 is white.
        row[x / 8] |= 0x80 >> UInt8(x % 8)
      }
      pixels += row
    }
    return PNG.greyscale1Bit(width: side, height: side, rows: pixels)
  }
}
