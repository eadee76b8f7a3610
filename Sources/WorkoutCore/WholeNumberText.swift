/// `value` to the nearest whole number, for words a person reads ("152", "-3").
///
/// `Int(_:)` traps on a value no `Int` holds (infinite, NaN, or beyond ±9.2e18), and a figure
/// from a faulty receiver, another build's status or a damaged record can be one: such a value
/// is written as Swift writes the Double ("1e+300", "inf", "nan"), from 1e15 up, where a
/// Double no longer holds every whole number anyway.
public func wholeNumberText(_ value: Double) -> String {
  value.isFinite && abs(value) < 1e15 ? String(Int(value.rounded())) : "\(value)"
}
