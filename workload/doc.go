// Package workload generates the key-popularity workloads of the DistCache
// simulator and benchmark driver.
//
// The DistCache evaluation (Liu et al., "DistCache: Provable Load Balancing
// for Large-Scale Storage Systems with Distributed Caching", FAST '19, §6.1)
// drives the system with uniform and Zipf-skewed read workloads over 100
// million keys, with skewness parameters up to 0.99. This package reproduces
// those workloads without materialising the key space:
//
//   - [Zipf] draws a popularity rank r in [0, n) with P(r = i) ∝ (i+1)^-s
//     for 0 <= s <= 1.5 (s = 0 is the uniform workload).
//   - [Scrambler] maps ranks to key ids with a seeded pseudo-random
//     permutation, so that the hottest keys are not the numerically smallest
//     ids (which would otherwise land on neighbouring partitions of any
//     range-based component and make the workload look artificially local).
//   - [Key] and [AppendKey] format a key id as its canonical key string.
//
// # Sampling algorithm
//
// [Zipf.Sample] implements rejection-inversion (W. Hörmann and
// G. Derflinger, "Rejection-inversion to generate variates from monotone
// discrete distributions", ACM TOMACS 6(3), 1996), in the form that also
// covers exponents s <= 1 (the variant used by Apache Commons RNG's
// RejectionInversionZipfSampler). With h(x) = x^-s and the hat integral
//
//	H(x) = (x^(1-s) - 1) / (1-s)     (→ log x as s → 1),
//
// a uniform u in (H(1.5)-1, H(n+0.5)] is inverted to x = H⁻¹(u) and rounded
// to k = round(x); k is accepted when u lies in the top h(k)-wide part of
// the interval (H(k-1/2), H(k+1/2)], which has width >= h(k) because h is
// convex. Every rank therefore has acceptance measure exactly h(k), so the
// output distribution is exact (up to floating-point rounding), setup is
// O(1), and the expected number of iterations is below 1.02 for every s in
// [0, 1.5]. A squeeze accepts about 98% of the candidates without
// evaluating H. Near s = 1, H and H⁻¹ are evaluated through log1p(x)/x and
// expm1(x)/x (with Taylor series for |x| < 1e-8), so s = 0.99, 1 and 1.01
// are all computed without cancellation; s = 0 samples the uniform
// distribution directly.
//
// The standard library's Zipf generator (math/rand and math/rand/v2) only
// supports s > 1, which excludes every skewed workload of the paper. The
// formula of Gray et al. ("Quickly generating billion-record synthetic
// databases", SIGMOD '94), used by YCSB, needs the O(n) zeta sum
// Σ i^-s at setup (100 million powers for the paper's key space) and its
// closed-form inversion is only an approximation: only the two hottest ranks
// are exact; at s = 0.9–0.99 and n = 10^8 the third-hottest key is drawn
// about 20% too often and ranks up to about 20 are still a few percent off,
// which is exactly the region a cache load-balancing experiment is sensitive
// to. (The package tests use it as a negative control.)
//
// # Normaliser
//
// [Zipf.Probability] and [Zipf.CumulativeTop] need the generalised harmonic
// number H(n,s) = Σ_{i=1..n} i^-s. It is computed in O(1): the first terms
// are summed directly and the rest with the Euler–Maclaurin formula (the
// integral, the two end corrections and six Bernoulli terms), which is
// accurate to a few units in the last place for every n up to 2^40.
package workload
