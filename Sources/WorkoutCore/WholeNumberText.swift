/// Whether `Int(value.rounded())` takes `value` without a trap, with every whole number around
/// it exact: finite and below 1e15 either way. A figure from a faulty receiver, another build's
/// status or a damaged record can be past it.
public func convertsToInt(_ value: Double) -> Bool {
  value.isFinite && abs(value) < 1e15
}

/// `value` to the nearest whole number, for words a person reads ("152", "-3"); one that does
/// not `convertsToInt` is written as Swift writes the Double ("1e+300", "inf", "nan").
public func wholeNumberText(_ value: Double) -> String {
  convertsToInt(value) ? String(Int(value.rounded())) : "\(value)"
}
