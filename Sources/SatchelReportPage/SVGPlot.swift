import Foundation
import SatchelCore

/// One chart as inline SVG: a time axis across, a value axis up, and what is drawn on them (lines, a band, a level,
/// marks at instants). Every label and tooltip is escaped here, so a caller hands over text as it came.
struct SVGPlot {
    // The right margin holds half of the last time label, which is centred on the axis's end.
    static let width = 760.0, height = 230.0
    static let left = 56.0, right = 38.0, top = 12.0, bottom = 30.0

    let x: ClosedRange<Double>
    let y: ClosedRange<Double>
    private var layers: [String] = []

    init(x: ClosedRange<Double>, y: ClosedRange<Double>) {
        // A zero-width domain would divide by zero; it only happens with a single instant or all-zero values.
        self.x = x.lowerBound < x.upperBound ? x : x.lowerBound...(x.lowerBound + 1)
        self.y = y.lowerBound < y.upperBound ? y : y.lowerBound...(y.lowerBound + 1)
    }

    func px(_ value: Double) -> Double {
        Self.left + (value - x.lowerBound) / (x.upperBound - x.lowerBound) * (Self.width - Self.left - Self.right)
    }

    func py(_ value: Double) -> Double {
        Self.height - Self.bottom - (value - y.lowerBound) / (y.upperBound - y.lowerBound) * (Self.height - Self.top - Self.bottom)
    }

    /// Grid lines with labels at `yTicks`, and labels under `xTicks`.
    mutating func axes(xTicks: [(Double, String)], yTicks: [(Double, String)]) {
        var out = "<g class=\"axes\">"
        let plotLeft = Self.left, plotRight = Self.width - Self.right, plotBottom = Self.height - Self.bottom
        for (value, label) in yTicks {
            let at = Self.number(py(value))
            out += "<line class=\"grid\" x1=\"\(Self.number(plotLeft))\" y1=\"\(at)\" x2=\"\(Self.number(plotRight))\" y2=\"\(at)\"/>"
            out += "<text class=\"tick y\" x=\"\(Self.number(plotLeft - 6))\" y=\"\(at)\">\(HTMLText.escaped(label))</text>"
        }
        for (value, label) in xTicks {
            let at = Self.number(px(value))
            out += "<line class=\"tick-mark\" x1=\"\(at)\" y1=\"\(Self.number(plotBottom))\" x2=\"\(at)\" y2=\"\(Self.number(plotBottom + 4))\"/>"
            out += "<text class=\"tick x\" x=\"\(at)\" y=\"\(Self.number(plotBottom + 17))\">\(HTMLText.escaped(label))</text>"
        }
        out += "<line class=\"axis\" x1=\"\(Self.number(plotLeft))\" y1=\"\(Self.number(plotBottom))\" x2=\"\(Self.number(plotRight))\" y2=\"\(Self.number(plotBottom))\"/>"
        out += "<line class=\"axis\" x1=\"\(Self.number(plotLeft))\" y1=\"\(Self.number(Self.top))\" x2=\"\(Self.number(plotLeft))\" y2=\"\(Self.number(plotBottom))\"/>"
        layers.append(out + "</g>")
    }

    mutating func line(_ points: [(Double, Double)], cssClass: String, label: String) {
        guard !points.isEmpty else { return }
        let coordinates = points.map { "\(Self.number(px($0.0))),\(Self.number(py($0.1)))" }.joined(separator: " ")
        layers.append("<polyline class=\"series \(cssClass)\" points=\"\(coordinates)\"><title>\(HTMLText.escaped(label))</title></polyline>")
    }

    /// The area between `low` and `high` at each point (an interval).
    mutating func band(_ points: [(x: Double, low: Double, high: Double)], cssClass: String, label: String) {
        guard !points.isEmpty else { return }
        let upper = points.map { "\(Self.number(px($0.x))),\(Self.number(py($0.high)))" }
        let lower = points.reversed().map { "\(Self.number(px($0.x))),\(Self.number(py($0.low)))" }
        layers.append("<polygon class=\"band \(cssClass)\" points=\"\((upper + lower).joined(separator: " "))\"><title>\(HTMLText.escaped(label))</title></polygon>")
    }

    mutating func level(_ value: Double, cssClass: String, label: String) {
        let at = Self.number(py(value))
        layers.append(
            "<g class=\"level \(cssClass)\"><line x1=\"\(Self.number(Self.left))\" y1=\"\(at)\" x2=\"\(Self.number(Self.width - Self.right))\" y2=\"\(at)\"/>"
                + "<text x=\"\(Self.number(Self.width - Self.right - 4))\" y=\"\(Self.number(py(value) - 4))\">\(HTMLText.escaped(label))</text>"
                + "<title>\(HTMLText.escaped(label))</title></g>")
    }

    /// A vertical mark at an instant, with a short glyph on top and the whole story as its tooltip.
    mutating func mark(at value: Double, cssClass: String, glyph: String, label: String) {
        let at = Self.number(px(value))
        layers.append(
            "<g class=\"mark \(cssClass)\"><line x1=\"\(at)\" y1=\"\(Self.number(Self.top))\" x2=\"\(at)\" y2=\"\(Self.number(Self.height - Self.bottom))\"/>"
                + "<text x=\"\(at)\" y=\"\(Self.number(Self.top + 10))\">\(HTMLText.escaped(glyph))</text>"
                + "<title>\(HTMLText.escaped(label))</title></g>")
    }

    /// The chart, sized by its container (the viewBox keeps its proportions).
    func svg(id: String, title: String) -> String {
        "<svg id=\"\(HTMLText.escaped(id))\" class=\"plot\" viewBox=\"0 0 \(Self.number(Self.width)) \(Self.number(Self.height))\" role=\"img\" "
            + "aria-label=\"\(HTMLText.escaped(title))\"><title>\(HTMLText.escaped(title))</title>" + layers.joined() + "</svg>"
    }

    /// Coordinates to a tenth of a unit: finer is invisible and only makes the page bigger.
    static func number(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(format: "%.1f", rounded)
    }

    /// Up to about `count` round values from 0 to at least `top` (steps of 1, 2 or 5 times a power of ten), and the top.
    static func ticks(upTo top: Double, count: Int = 5, integers: Bool = false) -> (values: [Double], top: Double) {
        guard top > 0 else { return ([0, 1], 1) }
        let raw = top / Double(count)
        let power = pow(10, (log10(raw)).rounded(.down))
        var step = [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= raw } ?? 10 * power
        if integers { step = max(1, step.rounded(.up)) }
        let steps = (top / step).rounded(.up)
        return ((0...Int(steps)).map { Double($0) * step }, steps * step)
    }
}
