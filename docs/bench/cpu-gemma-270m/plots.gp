# drawn by infer bench-serve --report from results.jsonl; run with: cd DIR && gnuplot plots.gp
set terminal pngcairo size 1000,720 noenhanced
set grid
set key below
set output 'latency_throughput.png'
set title 'End-to-end latency (p50) against output throughput'
set xlabel 'output tokens/s'
set ylabel 'ms'
set logscale y
plot 'plots/series0.dat' using 1:2 with linespoints title 'infer cpu, prefix cache baseline', \
     'plots/series1.dat' using 1:2 with linespoints title 'infer cpu, prefix cache continuous_batching', \
     'plots/series2.dat' using 1:2 with linespoints title 'infer cpu, prefix cache prefix_caching', \
     'plots/series3.dat' using 1:2 with linespoints title 'infer cpu, prefix cache sharegpt', \
     'plots/series4.dat' using 1:2 with linespoints title 'infer cpu, no prefix cache baseline', \
     'plots/series5.dat' using 1:2 with linespoints title 'infer cpu, no prefix cache continuous_batching', \
     'plots/series6.dat' using 1:2 with linespoints title 'infer cpu, no prefix cache prefix_caching', \
     'plots/series7.dat' using 1:2 with linespoints title 'infer cpu, no prefix cache sharegpt', \
     'plots/series8.dat' using 1:2 with linespoints title 'llama.cpp cpu baseline', \
     'plots/series9.dat' using 1:2 with linespoints title 'llama.cpp cpu continuous_batching', \
     'plots/series10.dat' using 1:2 with linespoints title 'llama.cpp cpu prefix_caching', \
     'plots/series11.dat' using 1:2 with linespoints title 'llama.cpp cpu sharegpt'
unset logscale y
set output 'ttft_cdf_baseline.png'
set title 'Time to first token, baseline (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_baseline_0.ttft.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_baseline_0.ttft.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_baseline_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'itl_cdf_baseline.png'
set title 'Inter-token latency, baseline (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_baseline_0.itl.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_baseline_0.itl.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_baseline_0.itl.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'ttft_cdf_continuous_batching.png'
set title 'Time to first token, continuous_batching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'itl_cdf_continuous_batching.png'
set title 'Inter-token latency, continuous_batching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_continuous_batching_0.itl.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_continuous_batching_0.itl.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_continuous_batching_0.itl.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'ttft_cdf_prefix_caching.png'
set title 'Time to first token, prefix_caching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'itl_cdf_prefix_caching.png'
set title 'Inter-token latency, prefix_caching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_prefix_caching_0.itl.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_prefix_caching_0.itl.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_prefix_caching_0.itl.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'ttft_cdf_sharegpt.png'
set title 'Time to first token, sharegpt (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_sharegpt_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'itl_cdf_sharegpt.png'
set title 'Inter-token latency, sharegpt (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cpu__prefix_cache_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cpu, prefix cache, all at once', \
     'samples/infer_cpu__no_prefix_cache_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cpu, no prefix cache, all at once', \
     'samples/llama.cpp_cpu_sharegpt_0.itl.tsv' using 1:2 with lines title 'llama.cpp cpu, all at once'
unset logscale x
set output 'workloads.png'
set title 'Output throughput per workload (best run)'
set xlabel ''
set ylabel 'output tokens/s'
set style data histograms
set style histogram clustered
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -20
plot for [c=2:4] 'plots/workloads.dat' using c:xtic(1) title columnheader(c)
